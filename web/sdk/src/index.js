// @chatd/sdk: the JavaScript client of chatd. See README.md and index.d.ts.
export { ChatClient } from './client.js';
export { RejectedError, APIError, ClosedError, TokenError, closeMeaning } from './errors.js';
export { ChatClient as default } from './client.js';
