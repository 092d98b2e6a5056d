// Everything a black-box test needs, from one import:
//   import { startDaemon, callExec, RawDaemon, runOnce, findByMarker, ... } from './lib/index.mjs';
export * from './env.mjs';
export * from './sdk.mjs';
export * from './raw.mjs';
export * from './proc.mjs';
export * from './test.mjs';
