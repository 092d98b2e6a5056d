// The snippets a reader copies out of the documentation, found where the reader finds them, so
// that a test runs them as written: fenced code blocks, and the rows of a table whose second
// column holds a client's configuration in `code spans`.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's top directory. */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** A file of the repository, as text. */
export function readDoc(rel) {
    return fs.readFileSync(path.join(REPO, rel), 'utf8');
}

/**
 * The fenced code blocks of a Markdown text, in order: { lang, text, line } (line: 1-based, of the
 * opening fence; text: the lines between the fences, each with its newline).
 */
export function fencedBlocks(md) {
    const blocks = [];
    const lines = md.split('\n');
    for (let i = 0; i < lines.length; i++) {
        const open = /^```(\S*)\s*$/.exec(lines[i]);
        if (!open) continue;
        const start = i;
        const body = [];
        for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i] + '\n');
        if (i >= lines.length) throw new Error(`a code block opened at line ${start + 1} is never closed`);
        blocks.push({ lang: open[1], text: body.join(''), line: start + 1 });
    }
    return blocks;
}

/**
 * The text of a Markdown section: from its heading (exact) to the next heading of any level (a
 * `# comment` in a fenced block is none).
 */
export function section(md, heading) {
    const lines = md.split('\n');
    const at = lines.indexOf(heading);
    if (at < 0) throw new Error(`no heading "${heading}"`);
    let end = at + 1, fenced = false;
    for (; end < lines.length; end++) {
        if (/^```/.test(lines[end])) fenced = !fenced;
        else if (!fenced && /^#{1,6} /.test(lines[end])) break;
    }
    return lines.slice(at + 1, end).join('\n');
}

/**
 * The rows of the first table in a Markdown text, past its header: [{ name, spans }], name the
 * first cell, spans the `code spans` of the second cell, in order (a file's path, then its text).
 */
export function tableRows(md) {
    const rows = md.split('\n').filter((l) => l.startsWith('|'));
    if (rows.length < 3 || !/^\|[-| ]+\|$/.test(rows[1])) throw new Error('no table');
    return rows.slice(2).map((row) => {
        const cells = row.slice(1, -1).split(/ \| /);
        if (cells.length !== 2) throw new Error(`a row of other than two cells: ${row}`);
        const spans = [...cells[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
        return { name: cells[0].trim(), spans };
    });
}
