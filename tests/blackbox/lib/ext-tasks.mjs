// The 2.x client's tasks in the 2026 era, the way @modelcontextprotocol/ext-tasks has a host do
// them: the client's own tools/call takes no CreateTaskResult (2.4: "Unsupported result type
// 'task'"), so ext-tasks asks the host for a raw request path below the client's codec and the
// request framing (_meta) the client would send. Here the raw path is the client's transport.

import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

export const TASKS_EXT = 'io.modelcontextprotocol/tasks';

/**
 * A task session over a connected 2.x client (connected with capabilities.extensions[TASKS_EXT])
 * and its transport. session.callTool(name, args) answers inline or as a task, polled.
 */
export function taskSession(client, transport, clientInfo, clientCapabilities) {
    const pending = new Map();
    const onmessage = transport.onmessage;
    transport.onmessage = (m, extra) => {
        const waiter = m.id !== undefined && (m.result !== undefined || m.error !== undefined) ? pending.get(m.id) : undefined;
        if (!waiter) return onmessage(m, extra);
        pending.delete(m.id);
        waiter(m.error ? { kind: 'error', error: m.error } : { kind: 'result', result: m.result });
    };
    let next = 1e9; // far from the client's own ids
    const rawDispatch = (request) => new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, resolve);
        transport.send({ jsonrpc: '2.0', ...request, id }).catch((e) => { pending.delete(id); reject(e); });
    });
    return createTaskSessionFromClient(client, {
        endpointId: 'mcp-execd-blackbox', rawDispatch,
        v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities },
    });
}

/** Call a tool through a task session: its CallToolResult, however it came (inline or a task). */
export async function callThroughTasks(session, name, args) {
    const execution = await session.callTool(name, args);
    return resultFromTaskOutcome((await execution.settle()).outcome);
}
