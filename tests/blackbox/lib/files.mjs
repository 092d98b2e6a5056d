// Helpers of the files-*.test.mjs tier (issue 10: files in, outputs/ and figures out).
import assert from 'node:assert/strict';
import { callToolTimed } from './sdk.mjs';

/** Calls a tool by name with the SDK, shaped like callExec()'s result. */
export function callTool(client, name, args, opts = {}) {
    return callToolTimed(client, name, args, { timeoutMs: opts.timeoutMs ?? 150000 });
}

/** The content items after the text one. */
export function items(r) {
    return (r.result.content ?? []).filter((c) => c.type !== 'text');
}

/** Width and height from a PNG's IHDR (asserting the signature and the chunk's place). */
export function pngSize(buf) {
    assert.ok(buf.length >= 24, `not a PNG: ${buf.length} bytes`);
    assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
    assert.equal(buf.subarray(12, 16).toString('latin1'), 'IHDR', 'first chunk is not IHDR');
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

/** Resident memory of a process in KiB (from /proc/<pid>/status). */
export async function rssKiB(pid) {
    const { readFile } = await import('node:fs/promises');
    const s = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(s)[1]);
}

// Runs under matplotlib take seconds on a loaded machine (importing it, rendering).
export const SLOW = { timeout: 240000 };
export const RUN_TIMEOUT_S = 180;
