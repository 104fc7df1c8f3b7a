// The review page inside Telegram, without Telegram's own script (the page loads scripts only
// from itself). Telegram opens the Mini App with its data in the address's fragment
// (#tgWebAppData=…&tgWebAppThemeParams=…); it takes events through window.TelegramWebviewProxy
// and sends them by calling window.Telegram.WebView.receiveEvent. Outside Telegram this script
// changes nothing: the page's plain links do the navigating.
(function () {
  "use strict";
  var THEME = "vaultbot.theme";
  var fragment = new URLSearchParams(location.hash.slice(1));
  var root = document.documentElement;
  var proxy = window.TelegramWebviewProxy;
  var handlers = {};
  // The public address's path every address of the page starts with ("" at a host's root).
  var base = root.getAttribute("data-root") || "";
  var atDoor = root.hasAttribute("data-door");

  function postEvent(type, data) {
    if (proxy && typeof proxy.postEvent === "function") proxy.postEvent(type, JSON.stringify(data || {}));
  }

  function receiveEvent(type, data) {
    if (handlers[type]) handlers[type](data || {});
  }

  // Telegram's theme, as CSS variables of the page: only colours, only as #rrggbb.
  var COLOURS = {
    "--bg": ["secondary_bg_color", "bg_color"],
    "--card": ["section_bg_color", "bg_color"],
    "--fg": ["text_color"],
    "--muted": ["subtitle_text_color", "hint_color"],
    "--line": ["section_separator_color", "hint_color"],
    "--accent": ["link_color", "accent_text_color"],
    "--button": ["button_color"],
    "--button-fg": ["button_text_color"],
    "--bad": ["destructive_text_color"],
  };

  function colour(theme, keys) {
    for (var i = 0; i < keys.length; i++) {
      var value = theme[keys[i]];
      if (typeof value === "string" && /^#[0-9a-fA-F]{6}$/.test(value)) return value;
    }
    return null;
  }

  function isDark(hex) {
    var n = parseInt(hex.slice(1), 16);
    return 0.2126 * (n >> 16) + 0.7152 * ((n >> 8) & 255) + 0.0722 * (n & 255) < 128;
  }

  function applyTheme(theme) {
    var bg = colour(theme, ["bg_color"]);
    if (!bg) return;
    // The palette's other colours (statuses, code) follow the theme's lightness.
    root.setAttribute("data-scheme", isDark(bg) ? "dark" : "light");
    Object.keys(COLOURS).forEach(function (name) {
      var value = colour(theme, COLOURS[name]);
      if (value) root.style.setProperty(name, value);
    });
  }

  function storedTheme() {
    try {
      return JSON.parse(sessionStorage.getItem(THEME) || "null");
    } catch (e) {
      return null;
    }
  }

  function keepTheme(theme) {
    if (!theme || typeof theme !== "object") return;
    sessionStorage.setItem(THEME, JSON.stringify(theme));
    applyTheme(theme);
  }

  var given = fragment.get("tgWebAppThemeParams");
  if (given) {
    try {
      keepTheme(JSON.parse(given));
    } catch (e) {
      // Not JSON: keep the page's own colours.
    }
  } else {
    var kept = storedTheme();
    if (kept) applyTheme(kept);
  }

  if (proxy) {
    root.setAttribute("data-telegram", "");
    window.Telegram = window.Telegram || {};
    window.Telegram.WebView = window.Telegram.WebView || {};
    window.Telegram.WebView.receiveEvent = receiveEvent;
    // Older Telegram apps call this one.
    window.TelegramGameProxy = { receiveEvent: receiveEvent };
    handlers.theme_changed = function (data) {
      keepTheme(data.theme_params);
    };
    handlers.back_button_pressed = function () {
      if (history.length > 1) history.back();
      else location.assign(base + "/");
    };
    // The timeline is the first page: Telegram's back button closes the app there, and goes back elsewhere.
    if (!atDoor) postEvent("web_app_setup_back_button", { is_visible: location.pathname !== base + "/" });
    postEvent("web_app_ready");
    postEvent("web_app_expand");
  }

  function signIn() {
    var status = document.getElementById("door-status");
    function refused(text) {
      status.textContent = text;
      status.className = "refused";
    }
    var initData = fragment.get("tgWebAppData");
    if (!initData) {
      refused("Open this page from the bot's Review button in Telegram.");
      return;
    }
    fetch(base + "/sign-in/telegram", { method: "POST", body: initData, credentials: "same-origin" })
      .then(function (response) {
        if (response.ok) {
          location.replace(base + "/");
          return null;
        }
        return response.text().then(function (text) {
          refused(text.trim());
        });
      })
      .catch(function () {
        refused("The review page could not be reached; close it and open it again.");
      });
  }

  if (atDoor) document.addEventListener("DOMContentLoaded", signIn);
})();
