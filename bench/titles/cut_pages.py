"""Cut the newspaper4k test pages down to what a clipping reads, into one gzipped JSON:
python bench/titles/cut_pages.py DATA_DIR bench/titles/newspaper4k-pages.json.gz
"""

import glob
import gzip
import json
import os
import re
import sys

import lxml.html

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bot.clip.extract import decode

D = sys.argv[1]  # newspaper4k-0.9.6/tests/data of its sdist (pip download --no-binary :all: newspaper4k==0.9.6)
KEEP = {
    "class",
    "id",
    "property",
    "name",
    "content",
    "datetime",
    "itemprop",
    "itemtype",
    "itemscope",
    "rel",
    "href",
    "type",
    "charset",
    "http-equiv",
    "role",
    "lang",
}
out = {}
SKIP = {"cnn_main_site", "wired_main_site", "yahoo_main_site", "sample_rss", "google_meta_refresh", "video_article_01"}
for f in sorted(glob.glob(D + "/html/*.html")):
    name = os.path.basename(f)[:-5]
    if name in SKIP:
        continue
    raw = open(f, "rb").read()
    tree = lxml.html.fromstring(decode(raw, None))
    for el in tree.xpath(
        '//script[not(@type="application/ld+json")] | //style | //noscript | //svg | //iframe | //link'
        " | //comment() | //img | //picture | //source | //video | //button | //input | //select | //path"
    ):
        if el.getparent() is not None:
            el.drop_tree()  # its tail stays where it was
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        for a in list(el.attrib):
            if a not in KEEP or (a == "href" and len(el.attrib[a]) > 200) or (a == "class" and len(el.attrib[a]) > 120):
                del el.attrib[a]
    html = lxml.html.tostring(tree, encoding="unicode")
    html = re.sub(r"\s{2,}", " ", html)
    meta = json.load(open(f"{D}/metadata/{name}.json")) if os.path.exists(f"{D}/metadata/{name}.json") else {}
    text = open(f"{D}/txt/{name}.txt", encoding="utf-8").read() if os.path.exists(f"{D}/txt/{name}.txt") else ""
    out[name] = {"url": meta.get("url"), "html": html, "first words": " ".join(text.split()[:8])}
    print(name, len(raw), len(html), file=sys.stderr)
data = json.dumps(out, ensure_ascii=False).encode()
gzip.open(sys.argv[2], "wb", compresslevel=9).write(data)
print(len(data), os.path.getsize(sys.argv[2]), file=sys.stderr)
