// One @ai-sdk/mcp client (run by ../client-matrix.long.test.mjs on Node 22): connects as the
// JSON argument says ({transport} over HTTP, or {stdio: {command, env}}), does its steps in
// order and prints their results as one JSON array. A step: 'list'; 'session' (open, set x, read
// x + 1, close: the last read's result); or {name, arguments}, a tool call.
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

const conf = JSON.parse(process.argv[2]);
const client = await createMCPClient({
    transport: conf.stdio ? new Experimental_StdioMCPTransport(conf.stdio) : conf.transport,
});
const out = [];
try {
    for (const s of conf.steps) {
        if (s === 'list') out.push(await client.listTools());
        else if (s === 'session') {
            const h = (await client.callTool({ name: 'session_open', arguments: {} })).structuredContent.session;
            await client.callTool({ name: 'exec', arguments: { code: 'x = 41', session: h } });
            out.push(await client.callTool({ name: 'exec', arguments: { code: 'print(x + 1)', session: h } }));
            await client.callTool({ name: 'session_close', arguments: { session: h } });
        } else out.push(await client.callTool(s));
    }
} finally {
    await client.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
