// A fake OpenAI-compatible chat model on loopback for the real-host test: it records every
// request OpenClaw sends (with the test step it belonged to) and answers by script:
//   - a tool result after the user's latest message → text "TOOL_RESULT_SEEN: <result>", so a
//     tool loop always ends after one tool call (answering a tool result with another tool call
//     makes OpenClaw loop until its context is full);
//   - "CALL_TOOL <name> <json args>" at the end of the user's message → one call of that tool;
//   - otherwise → text "ACK: <the user's first line>".
// OpenClaw streams /v1/chat/completions (SSE) and appends a synthetic user message of internal
// context (<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>) even after tool results; it is not the user's turn.
import http from "node:http";

/** @param {unknown} content @returns {string} */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? p?.content ?? "")).join("");
  return content == null ? "" : JSON.stringify(content);
}

const isInternal = (/** @type {any} */ m) => textOf(m?.content).trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT");

/** @param {any} body @returns {{ text?: string, tool?: { name: string, arguments: any } }} */
function reply(body) {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  let u = -1;
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role === "user" && !isInternal(msgs[i])) { u = i; break; }
  }
  const toolResult = msgs.slice(u + 1).reverse().find((/** @type {any} */ m) => m.role === "tool");
  if (toolResult) return { text: `TOOL_RESULT_SEEN: ${textOf(toolResult.content).slice(0, 400)}` };
  const userText = textOf(msgs[u]?.content);
  const call = /CALL_TOOL\s+([A-Za-z0-9_.-]+)\s*(\{.*?\})?\s*$/s.exec(userText);
  if (call) {
    let args = {};
    try { args = call[2] ? JSON.parse(call[2]) : {}; } catch { /* no arguments */ }
    return { tool: { name: call[1], arguments: args } };
  }
  const first = userText.split("\n").map((l) => l.trim().replace(/^\[[^\]]*\d{2}:\d{2}[^\]]*\]\s*/, "")).find((l) => l) ?? "";
  return { text: `ACK: ${first.slice(0, 80)}` };
}

/**
 * Starts the fake model. `step` labels the requests recorded from now on.
 * @returns {Promise<{ url: string, requests: { step: string, body: any, reply: any }[], setStep: (s: string) => void, close: () => Promise<void> }>}
 */
export async function startFakeModel() {
  /** @type {{ step: string, body: any, reply: any }[]} */
  const requests = [];
  let step = "";
  let seq = 0;
  const server = http.createServer((req, res) => {
    let data = "";
    req.on("data", (c) => { data += c; });
    req.on("end", () => {
      const url = (req.url ?? "").split("?")[0];
      if (req.method === "GET" && url.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model", owned_by: "fake" }] }));
        return;
      }
      if (req.method !== "POST" || !url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `fake model: no route ${req.method} ${url}` } }));
        return;
      }
      let body;
      try { body = JSON.parse(data); } catch {
        res.writeHead(400);
        res.end();
        return;
      }
      const r = reply(body);
      requests.push({ step, body, reply: r });
      const id = `chatcmpl-fake-${++seq}`;
      const created = Math.floor(Date.now() / 1000);
      const tool = r.tool ? { id: `call_fake_${seq}`, type: "function", function: { name: r.tool.name, arguments: JSON.stringify(r.tool.arguments) } } : null;
      const usage = { prompt_tokens: Math.ceil(data.length / 4), completion_tokens: 8, total_tokens: Math.ceil(data.length / 4) + 8 };
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
          id, object: "chat.completion", created, model: body.model,
          choices: [{ index: 0, message: tool ? { role: "assistant", content: null, tool_calls: [tool] } : { role: "assistant", content: r.text }, finish_reason: tool ? "tool_calls" : "stop" }],
          usage,
        }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      const chunk = (/** @type {any} */ delta, /** @type {string | null} */ finish = null) =>
        res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
      chunk({ role: "assistant", content: "" });
      if (tool) {
        chunk({ tool_calls: [{ index: 0, id: tool.id, type: "function", function: { name: tool.function.name, arguments: "" } }] });
        chunk({ tool_calls: [{ index: 0, function: { arguments: tool.function.arguments } }] });
      } else {
        chunk({ content: r.text });
      }
      chunk({}, tool ? "tool_calls" : "stop");
      if (body.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}\n\n`);
      }
      res.write("data: [DONE]\n\n");
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const addr = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${addr.port}/v1`,
    requests,
    setStep: (s) => { step = s; },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve(undefined)); }),
  };
}
