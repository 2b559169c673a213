"""Interactive API docs: one page and one script shipped in the package, nothing fetched.

The page reads ``/openapi.json`` from this server and lets you try each operation with your
API key (kept in the page's memory, never stored).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

_CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memkg API</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
details{border:1px solid #ccc;border-radius:4px;margin:.4em 0;padding:.3em .6em}
summary{cursor:pointer}.m{display:inline-block;width:4.5em;font-weight:bold}
.GET{color:#06c}.POST{color:#080}.DELETE{color:#c00}
label{display:block;margin:.2em 0}input,textarea{font:13px monospace;width:40em}
pre{background:#f5f5f5;padding:.5em;overflow:auto;max-height:30em}
</style></head><body>
<h1>memkg API</h1>
<p>The document: <a href="/openapi.json">/openapi.json</a>. API key:
<input id="token" type="password" placeholder="mk_..." autocomplete="off"></p>
<div id="ops">loading...</div>
<script src="/docs/docs.js"></script>
</body></html>
"""

SCRIPT = r"""
"use strict";
function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  Object.entries(attrs || {}).forEach(([k, v]) => n.setAttribute(k, v));
  kids.forEach(k => n.append(k));
  return n;
}
async function send(method, path, form, out) {
  let url = path, query = new URLSearchParams();
  for (const input of form.querySelectorAll("input[data-in]")) {
    if (!input.value) continue;
    if (input.dataset.in === "path") url = url.replace("{" + input.name + "}",
                                                       encodeURIComponent(input.value));
    else input.value.split(",").forEach(v => query.append(input.name, v));
  }
  if ([...query].length) url += "?" + query;
  const headers = {};
  const token = document.getElementById("token").value;
  if (token) headers["Authorization"] = "Bearer " + token;
  const body = form.querySelector("textarea");
  const init = {method, headers, credentials: "omit"};
  if (body && body.value.trim()) { headers["Content-Type"] = "application/json";
                                   init.body = body.value; }
  const res = await fetch(url, init);
  out.textContent = res.status + " " + res.statusText + "\n\n" + await res.text();
}
async function main() {
  const doc = await (await fetch("/openapi.json")).json();
  const ops = document.getElementById("ops");
  ops.textContent = "";
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const M = method.toUpperCase();
      const form = el("form");
      for (const p of op.parameters || []) {
        form.append(el("label", {}, p.name + " (" + p.in + (p.required ? ", required" : "")
                                    + ") ", el("input", {name: p.name, "data-in": p.in})));
      }
      if (op.requestBody) form.append(el("label", {}, "JSON body",
                                         el("textarea", {rows: "6"})));
      const out = el("pre");
      const go = el("button", {type: "submit"}, "Send");
      form.append(go);
      form.addEventListener("submit", e => { e.preventDefault(); send(M, path, form, out); });
      const scope = op["x-memkg-scope"] ? " [scope: " + op["x-memkg-scope"] + "]" : "";
      ops.append(el("details", {}, el("summary", {}, el("span", {class: "m " + M}, M),
                                      path + " - " + (op.summary || "") + scope), form, out));
    }
  }
}
main();
"""


async def page(_request: Request) -> Response:
    return Response(PAGE, media_type="text/html", headers={"content-security-policy": _CSP})


async def asset(request: Request) -> Response:
    if request.path_params["asset"] != "docs.js":
        return Response(b'{"error":"http.404","message":"Not Found"}', 404,
                        media_type="application/json")  # fmt: skip
    return Response(SCRIPT, media_type="text/javascript")
