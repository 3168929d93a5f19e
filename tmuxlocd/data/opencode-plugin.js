// tmuxlocd opencode plugin
// Written by `tmuxlocd install opencode`; `tmuxlocd install opencode --remove` deletes it.
//
// opencode has no command hooks.  This plugin runs tmuxlocd's hook command with the
// Claude-shaped event JSON on stdin and puts the text it prints into the system prompt.
// Every decision (told once, the turn count, what changed) is the hook's; the plugin keeps
// only the last text per session, because a system prompt is built anew for every model
// request: what one request carried, the next does not hold.
//
// - a session this process has not seen: SessionStart (the hook tells the location);
// - a user message (chat.message): UserPromptSubmit at its first model request;
// - a shell tool call (tool.execute.after, tool "bash"): PostToolUse at the next request;
// - every other request of the session carries the last text unchanged;
// - the title generator's request (opencode 1.18: its system prompt starts "You are a
//   title generator") gets nothing and consumes nothing.
import { spawn } from "node:child_process"

const ARGV = [];
const TIMEOUT_MS = 10000
const TITLE = "You are a title generator"

function ask(event) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(ARGV[0], ARGV.slice(1), { stdio: ["pipe", "pipe", "ignore"], timeout: TIMEOUT_MS })
    } catch {
      resolve(null)
      return
    }
    child.on("error", () => resolve(null))
    child.stdout.on("data", (chunk) => { out += chunk })
    child.on("close", () => {
      if (!out.trim()) return resolve(null)
      try {
        const text = JSON.parse(out)?.hookSpecificOutput?.additionalContext
        resolve(typeof text === "string" ? text : null)
      } catch {
        resolve(null)
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(event))
  })
}

export const TmuxLocation = async () => {
  const pending = new Map() // sessionID -> the event its next request reports
  const told = new Map() // sessionID -> the text its requests carry
  return {
    "chat.message": async (input) => {
      if (input?.sessionID) pending.set(input.sessionID, "UserPromptSubmit")
    },
    "tool.execute.after": async (input) => {
      const id = input?.sessionID
      if (id && input.tool === "bash" && !pending.has(id)) pending.set(id, "PostToolUse")
    },
    "experimental.chat.system.transform": async (input, output) => {
      const id = input?.sessionID
      const system = output?.system
      if (!id || !Array.isArray(system)) return
      if (String(system[0] ?? "").startsWith(TITLE)) return
      const events = []
      if (!told.has(id)) {
        // New to this process (a new session, or one continued by a new opencode): its
        // requests hold nothing yet.
        told.set(id, "")
        events.push({ hook_event_name: "SessionStart", session_id: id, source: "startup" })
      }
      const name = pending.get(id)
      pending.delete(id)
      if (name) events.push({ hook_event_name: name, session_id: id })
      for (const event of events) {
        const text = await ask(event)
        if (text) told.set(id, text)
      }
      const text = told.get(id)
      if (text) system.push(text)
    },
  }
}
