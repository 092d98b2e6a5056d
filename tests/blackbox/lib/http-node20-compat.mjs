// node --import ./lib/http-node20-compat.mjs node_modules/.bin/conformance …  (Node 20 only)
import { register } from 'node:module';
register('./http-fs-hooks.mjs', import.meta.url);
