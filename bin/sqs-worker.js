#!/usr/bin/env node
// npm `bin` shim of the operations CLI: registers tsx so the TypeScript entry point runs without a build.
import { register } from 'tsx/esm/api';

register();
await import('./sqs-worker.ts');
