// Module resolve hook: inside the conformance package only, `fs` / `node:fs` resolve to
// http-fs-shim.mjs (which adds globSync). Registered by http-node20-compat.mjs.
const shim = new URL('./http-fs-shim.mjs', import.meta.url).href;
export async function resolve(specifier, context, next) {
    if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
        /\/(@modelcontextprotocol\/conformance|conformance-next)\//.test(context.parentURL))
        return { url: shim, shortCircuit: true };
    return next(specifier, context);
}
