// Module resolve hook (module.register): inside the stdio tier's test files, `./lib/index.mjs`
// resolves to lib/http-sdk-shim.mjs, so their startDaemon() serves and connects over HTTP.
const shim = new URL('./http-sdk-shim.mjs', import.meta.url).href;
const blackbox = new URL('../', import.meta.url).href;
export async function resolve(specifier, context, next) {
    if (specifier === './lib/index.mjs' && context.parentURL?.startsWith(blackbox) &&
        !context.parentURL.slice(blackbox.length).includes('/') &&
        !context.parentURL.slice(blackbox.length).startsWith('http-'))
        return { url: shim, shortCircuit: true };
    return next(specifier, context);
}
