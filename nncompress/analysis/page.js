// nncompress surprisal page: draws each file's text from the compact data beside it (costs and
// top-5 predictions as base64 arrays, see nncompress/analysis/page.py), colours every character
// by its cost and shows the cost and the model's five likeliest bytes on hover.
// `#hover=G` (or `#hover=F.G`: file F) opens the tooltip of character group G on load.
"use strict";
(function () {
  const PCT = JSON.parse(document.getElementById("nnc-pct").textContent);
  const EDGES = JSON.parse(document.getElementById("nnc-edges").textContent); // centibits
  const tip = document.getElementById("nnc-tip");
  const utf8 = new TextDecoder("utf-8");

  function bytesOf(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function label(b) {
    if (b === 0x20) return "\u2423";
    if (b >= 0x21 && b <= 0x7e) return String.fromCharCode(b);
    if (b === 0x0a) return "\\n";
    if (b === 0x0d) return "\\r";
    if (b === 0x09) return "\\t";
    return "\\x" + b.toString(16).padStart(2, "0");
  }
  function costBin(cb) {
    let i = 0;
    while (i < EDGES.length && cb >= EDGES[i]) i++;
    return i;
  }
  const bits = (cb) => (cb / 100).toFixed(2);

  // kind codes: "1".."4" a character of that many bytes, "n" LF, "r" CR LF, "t" tab,
  // "A".."D" a 1..4-byte sequence shown escaped
  function width(k) {
    if (k >= "1" && k <= "4") return +k;
    if (k >= "A" && k <= "D") return k.charCodeAt(0) - 64;
    return k === "r" ? 2 : 1;
  }
  function shown(k, raw, s, e) {
    if (k === "n" || k === "r") return "\u21b5";
    if (k === "t") return "\t";
    const chunk = raw.subarray(s, e);
    if (k >= "1" && k <= "4") return utf8.decode(chunk);
    if (e - s === 1) return "\\x" + raw[s].toString(16).padStart(2, "0");
    return "\\u" + utf8.decode(chunk).codePointAt(0).toString(16).padStart(4, "0");
  }

  function draw(node) {
    const d = JSON.parse(node.textContent);
    const raw = bytesOf(d.bytes), costs = new DataView(bytesOf(d.costs).buffer);
    const top = bytesOf(d.top), pct = bytesOf(d.pct);
    const cost = (i) => costs.getUint16(2 * i, true);
    const box = document.getElementById(node.dataset.target);
    const file = { raw, cost, top, pct, box, groups: [] };
    const frag = document.createDocumentFragment();
    let pos = 0;
    for (let g = 0; g < d.kinds.length; g++) {
      const k = d.kinds[g], end = pos + width(k);
      let cb = 0;
      for (let i = pos; i < end; i++) cb += cost(i);
      const el = document.createElement("i");
      el.className = "c" + costBin(cb) + (k === "n" || k === "r" ? " nl" : k >= "A" && k <= "D" ? " e" : "");
      el.textContent = shown(k, raw, pos, end);
      el.dataset.g = g;
      frag.appendChild(el);
      if (k === "n" || k === "r") frag.appendChild(document.createTextNode("\n"));
      file.groups.push([pos, end, cb]);
      pos = end;
    }
    box.replaceChildren(frag);
    box.addEventListener("mouseover", (ev) => {
      const el = ev.target.closest("i");
      if (el && box.contains(el)) show(file, el);
    });
    box.addEventListener("mouseleave", hide);
    return file;
  }

  function tipText(file, g) {
    const [s, e, cb] = file.groups[g];
    let text;
    if (e - s === 1) {
      text = label(file.raw[s]) + ": " + bits(cb) + " bits";
    } else {
      const parts = [];
      for (let i = s; i < e; i++) parts.push(label(file.raw[i]) + " " + bits(file.cost(i)));
      text = bits(cb) + " bits (" + parts.join(" + ") + ")";
    }
    const best = [];
    for (let j = 0; j < 5; j++) best.push(label(file.top[5 * g + j]) + " " + PCT[file.pct[5 * g + j]]);
    return text + "\ntop-5: " + best.join(", ");
  }
  let current = null;
  function show(file, el) {
    if (current) current.classList.remove("on");
    current = el;
    el.classList.add("on");
    tip.textContent = tipText(file, +el.dataset.g);
    const r = el.getBoundingClientRect();
    tip.style.left = Math.max(0, r.left + window.scrollX) + "px";
    tip.style.top = r.bottom + window.scrollY + 4 + "px";
    tip.hidden = false;
  }
  function hide() {
    if (current) current.classList.remove("on");
    current = null;
    tip.hidden = true;
  }

  const files = Array.from(document.querySelectorAll("script.nnc-data"), draw);
  const asked = /^#hover=(?:(\d+)\.)?(\d+)$/.exec(location.hash);
  if (asked) {
    const file = files[+(asked[1] || 0)];
    const el = file && file.box.querySelector(`i[data-g="${+asked[2]}"]`);
    if (el) show(file, el);
  }
  document.body.dataset.groups = files.reduce((n, f) => n + f.groups.length, 0);
})();
