/**
 * Node.js of the poller image (`FROM node:20…` in the Dockerfile and in the image of a `workerEntry`): the target
 * both poller bundles are built for (tools/build/build-poller.ts, poller-entry-image.ts).
 *
 * @internal
 */
export const POLLER_NODE_TARGET = 'node20';
