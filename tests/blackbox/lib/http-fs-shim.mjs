// Node 20 has no fs.globSync, which @modelcontextprotocol/conformance imports (it needs Node 22).
// Its server subcommand never calls it (mcp.md §3.5), so this stand-in only has to exist.
export * from 'node:fs';
import fs from 'node:fs';
export default fs;
export function globSync() { throw new Error('fs.globSync is not available on this Node version'); }
