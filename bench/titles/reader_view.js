// The title Mozilla Readability.js gives each page, as Reader View computes it in parse(): JSON-LD read
// first, then scripts and styles removed, then the <meta> tags and the <title>. Used by
// `bench/clip.py reader-view NODE_MODULES` (which needs jsdom and @mozilla/readability installed there).
// Reads [{name, url, html}] on stdin; prints {name: title}.
const { JSDOM } = require("jsdom");
const { Readability } = require("@mozilla/readability");

let input = "";
process.stdin.on("data", chunk => (input += chunk));
process.stdin.on("end", () => {
  const titles = {};
  for (const page of JSON.parse(input)) {
    const doc = new JSDOM(page.html, { url: page.url }).window.document;
    const reader = new Readability(doc);
    reader._unwrapNoscriptImages(doc);
    const jsonLd = reader._getJSONLD(doc);
    reader._removeScripts(doc);
    reader._prepDocument();
    titles[page.name] = reader._getArticleMetadata(jsonLd).title;
  }
  process.stdout.write(JSON.stringify(titles));
});
