// @membus/openclaw-plugin: membus as OpenClaw's context engine (plugins.slots.contextEngine =
// "membus"), publishing every turn to NATS JetStream and exposing the memory tools.
import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { createPlugin } from "./src/plugin.js";

export default definePluginEntry({
  id: "membus",
  name: "membus",
  description: "Long-term memory and context engine over NATS (membus).",
  kind: "context-engine",
  register(api) {
    createPlugin().register(api);
  },
});
