// tmuxlocd pi plugin
// Written by `tmuxlocd install pi`; `tmuxlocd install pi --remove` deletes it.
//
// pi runs extensions in its own process, and has no command hooks.  This extension runs
// tmuxlocd's hook command with Claude-shaped event JSON on stdin and puts the text it prints
// where pi keeps it in the session, so that it is in every later request of the session
// and comes back when the session is continued.  Every decision (told once, the turn count,
// what changed) is the hook's: it prints nothing when the model's history holds the
// location already.
//
// - before_agent_start (a prompt): UserPromptSubmit; the text becomes a custom message
//   right after the prompt (stored in the session, not shown);
// - tool_result of the "bash" tool: PostToolUse; the text is appended to the tool's
//   result (a `tmux split-window` the model just ran is known at its next request);
// - session_compact: PreCompact with trigger "manual" (the history was summarised: what it
//   was told may be gone, so the next prompt tells it again);
// - session_start: SessionStart (the agent is idle; nothing is told: pi cannot add to a
//   history before a prompt), agent_start UserPromptSubmit's working, agent_end Stop,
//   session_shutdown SessionEnd.
//
// pi asks the user nothing by itself (no permission dialogs): its agent is working or idle,
// never waiting.  The hook runs once at a time, in the order of the events.
import { spawn } from "node:child_process"

const ARGV = [];
const TIMEOUT_MS = 10000
const CUSTOM_TYPE = "tmuxlocd"

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

export default function (pi) {
  let chain = Promise.resolve() // the hook runs once at a time, in order

  function tell(ctx, fields) {
    let id = ""
    try {
      id = ctx?.sessionManager?.getSessionId?.() ?? ""
    } catch {}
    if (typeof id !== "string" || !id) return Promise.resolve(null)
    const done = chain.then(() => ask({ ...fields, session_id: id, cwd: ctx?.cwd }))
    chain = done.then(() => {}, () => {})
    return done.catch(() => null)
  }

  pi.on("session_start", async (event, ctx) => {
    await tell(ctx, { hook_event_name: "SessionStart", source: event?.reason ?? "startup" })
  })

  pi.on("before_agent_start", async (_event, ctx) => {
    const text = await tell(ctx, { hook_event_name: "UserPromptSubmit" })
    if (!text) return undefined
    return { message: { customType: CUSTOM_TYPE, content: text, display: false } }
  })

  pi.on("tool_result", async (event, ctx) => {
    if (event?.toolName !== "bash") return undefined
    const text = await tell(ctx, { hook_event_name: "PostToolUse", tool_name: "bash" })
    if (!text || !Array.isArray(event.content)) return undefined
    return { content: [...event.content, { type: "text", text }] }
  })

  pi.on("session_compact", async (_event, ctx) => {
    await tell(ctx, { hook_event_name: "PreCompact", trigger: "manual" })
  })

  pi.on("agent_end", async (_event, ctx) => {
    await tell(ctx, { hook_event_name: "Stop" })
  })

  pi.on("session_shutdown", async (event, ctx) => {
    await tell(ctx, { hook_event_name: "SessionEnd", reason: event?.reason ?? "quit" })
  })
}
