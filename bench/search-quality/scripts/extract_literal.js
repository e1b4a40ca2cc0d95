// For servers that cannot start here (they need a live service or OAuth files before they
// answer tools/list): find the first `tools: [` array literal in a built JS file, cut it out
// by bracket matching and evaluate it (plain object literals only), print {"tools": [...]}.
//   node extract_literal.js FILE OUT.json
const fs = require("fs");
const [file, out] = process.argv.slice(2);
const src = fs.readFileSync(file, "utf8");
const at = src.search(/tools:\s*\[/);
if (at < 0) throw new Error("no `tools: [` in " + file);
let i = src.indexOf("[", at), depth = 0, quote = null;
const start = i;
for (; i < src.length; i++) {
  const c = src[i];
  if (quote) { if (c === "\\") i++; else if (c === quote) quote = null; continue; }
  if (c === '"' || c === "'" || c === "`") quote = c;
  else if (c === "[" || c === "{") depth++;
  else if (c === "]" || c === "}") { depth--; if (depth === 0) break; }
}
const tools = (0, eval)("(" + src.slice(start, i + 1) + ")");
fs.writeFileSync(out, JSON.stringify({ serverInfo: null, extractedFrom: file, tools }, null, 1));
console.log(`${out}: ${tools.length} tools (extracted from ${file})`);
