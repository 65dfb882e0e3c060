// The console's Settings forecast is the platform's own (src/domain/patch-effect.ts), shared
// with the command-line client, so both say the same about a change before it is sent.

export * from '../../../src/domain/patch-effect';
