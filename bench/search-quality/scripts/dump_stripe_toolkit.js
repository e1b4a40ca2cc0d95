// Dumps the tools of @stripe/agent-toolkit (0.7.x, the last line whose tools are defined in
// the package; 0.9 fetches them from Stripe's hosted MCP server) through its own OpenAI
// adapter, with every action allowed: the names, descriptions and JSON Schemas it would send.
//   cd DIR_WITH_node_modules && node dump_stripe_toolkit.js OUT.json
const fs = require("fs");
const path = require("path");
const { StripeAgentToolkit } = require(path.resolve("node_modules/@stripe/agent-toolkit/openai"));
const all = { create: true, read: true, update: true };
const resources = ["customers", "products", "prices", "paymentLinks", "invoices", "invoiceItems",
  "balance", "refunds", "paymentIntents", "subscriptions", "coupons", "disputes", "documentation"];
const actions = Object.fromEntries(resources.map((r) => [r, all]));
const toolkit = new StripeAgentToolkit({ secretKey: "sk_test_dummy", configuration: { actions } });
const tools = toolkit.getTools().map((t) => ({
  name: t.function.name, description: t.function.description, inputSchema: t.function.parameters }));
fs.writeFileSync(process.argv[2], JSON.stringify({ serverInfo: null, tools }, null, 1));
console.log(`${process.argv[2]}: ${tools.length} tools`);
