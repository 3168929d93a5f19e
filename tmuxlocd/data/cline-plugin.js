// tmuxlocd cline plugin
// Written by `tmuxlocd install cline`; `tmuxlocd install cline --remove` deletes it.
//
// Cline CLI's file hooks cannot add to a prompt (TaskStart runs detached and its output is
// not read); a plugin's hooks can.  This plugin runs tmuxlocd's hook command with
// Claude-shaped event JSON on stdin and gives Cline the text it prints as `appendContext`,
// which Cline adds to the conversation as a `<hook_context>` user message.  Every decision
// (told once, the turn count, what changed) is the hook's: it prints nothing when the
// conversation holds the location already.
//
// - beforeRun (a prompt): UserPromptSubmit, its text after the prompt;
// - afterTool of `run_commands`: PostToolUse, its text after the tool's result (a
//   `tmux split-window` the model just ran is known at its next request);
// - afterRun: Stop (the agent is idle).
//
// Cline runs plugins in a child process of its own (no stdin or stdout), on the pane's tty
// when the session runs in the CLI.  A session that runs in Cline's hub has no tty: the
// hook is told nothing there, and the daemon keeps no agent for it.  The hook runs once at
// a time, in the order of the events.
import { spawn } from "node:child_process"

const ARGV = [];
const TIMEOUT_MS = 2500 // Cline gives a plugin's hook call 3 s
const SHELL_TOOL = "run_commands"

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

let session = "" // the root session's id (setup's), stable when a task is resumed
let chain = Promise.resolve() // the hook runs once at a time, in order

function tell(snapshot, fields) {
  const id = session || snapshot?.conversationId || ""
  if (typeof id !== "string" || !id) return Promise.resolve(null)
  const done = chain.then(() => ask({ ...fields, session_id: id }))
  chain = done.then(() => {}, () => {})
  return done.catch(() => null)
}

function withText(text) {
  return text ? { appendContext: text } : undefined
}

const plugin = {
  name: "tmuxlocd",
  manifest: { capabilities: ["hooks"] },
  setup(_api, ctx) {
    const id = ctx?.session?.sessionId
    if (typeof id === "string") session = id
  },
  hooks: {
    async beforeRun({ snapshot } = {}) {
      // A subagent's run is no prompt of the session.
      if (snapshot?.parentAgentId) return undefined
      return withText(await tell(snapshot, { hook_event_name: "UserPromptSubmit" }))
    },
    async afterTool({ snapshot, toolCall, tool } = {}) {
      const name = tool?.name ?? toolCall?.toolName ?? toolCall?.name
      if (name !== SHELL_TOOL || snapshot?.parentAgentId) return undefined
      const fields = { hook_event_name: "PostToolUse", tool_name: SHELL_TOOL }
      return withText(await tell(snapshot, fields))
    },
    async afterRun({ snapshot } = {}) {
      if (snapshot?.parentAgentId) return
      await tell(snapshot, { hook_event_name: "Stop" })
    },
  },
}

export default plugin
