// Type declarations of @chatd/sdk, the JavaScript client of chatd.
// The wire contract is docs/protocol.md; the behaviour follows pkg/client.

/** Connection state of a ChatClient. */
export type ConnState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A message's current state, as the SDK hands it out. */
export interface Message {
  id: string;
  cid: string;
  chat: string;
  seq: number;
  from: string;
  body: string;
  /** The sender's meta object (verbatim JSON value), or undefined. */
  meta?: Record<string, unknown>;
  /** RFC 3339 time of acceptance. */
  ts: string;
  /** RFC 3339 time of the latest edit; undefined if never edited. */
  editedAt?: string;
  deleted: boolean;
  /** emoji → sorted user ids; {} when none. */
  reactions: Record<string, string[]>;
}

/** Every stored event of a chat's seq log, raw (a `msg` frame or history row). */
export interface ChatEvent {
  id: string;
  cid: string;
  chat: string;
  seq: number;
  from: string;
  body: string;
  ts: string;
  /** 'message' for a message; otherwise the event's kind. */
  kind: 'message' | 'edit' | 'delete' | 'reaction';
  /** The message an edit/delete/reaction is about. */
  target?: string;
  emoji?: string;
  on?: boolean;
  meta?: Record<string, unknown>;
  /** How it reached this client. */
  via: 'live' | 'history' | 'self';
}

export interface Update {
  /** The target message's new state; undefined when the SDK holds no state for it (it was
   * neither handed out nor read through history() or message(), e.g. a chat tracked from a
   * later seq): apply `event` yourself, or read the message with message(). */
  message: Message | undefined;
  /** The event that changed it. */
  event: ChatEvent;
}

export interface StateEvent {
  state: ConnState;
  /** Close code of the connection that ended (0: network failure, no close frame). */
  code?: number;
  /** Reason text the server sent, or the error. */
  reason?: string;
  /** Human text of the close code, e.g. 4000 → 'abandoned: did not ack in time, resyncing from history'. */
  meaning?: string;
  /** From hello, when state is 'open'. */
  user?: string;
  device?: string;
  /** ms until the next attempt, when state is 'reconnecting'. */
  retryInMs?: number;
}

export interface TypingEvent { chat: string; user: string }
export interface PresenceEvent { user: string; online: boolean; lastSeen?: string }
export interface ReceiptEvent { chat: string; user: string; upto: string; seq: number }

export interface ChatClientEvents {
  message: Message;
  update: Update;
  event: ChatEvent;
  typing: TypingEvent;
  presence: PresenceEvent;
  receipt: ReceiptEvent;
  state: StateEvent;
  error: Error;
}

export interface Accepted {
  id: string;
  seq: number;
  cid: string;
  chat: string;
  ts: string;
  /** 'duplicate' when the server answered a resend of an already stored cid. */
  status: 'accepted' | 'duplicate';
}

export interface ChatClientOptions {
  /** chatd's base URL, e.g. 'http://127.0.0.1:8080' or '' / location.origin in a browser. */
  url: string;
  /** A JWT, or a function returning one; the function is called before each dial,
   * each REST call, and before the token's exp to refresh the session in-band. */
  token: string | (() => Promise<string> | string);
  /** WebSocket constructor; default globalThis.WebSocket. */
  WebSocket?: typeof WebSocket;
  /** fetch; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Reconnect delay bounds: attempt n waits uniform [minMs, min(maxMs, minMs·2ⁿ)]. Default 100 / 10000. */
  backoff?: { minMs?: number; maxMs?: number };
  /** Ack batching window. Default 50 ms. */
  ackDelayMs?: number;
  /** How long a frame beyond a gap waits to be filled live before history is asked. Default 200 ms. */
  gapWaitMs?: number;
  /** Bounds the WebSocket handshake plus the wait for `hello`. Default 10000 ms. */
  dialTimeoutMs?: number;
  /** connect() rejects (and the client closes) when no hello came within this; 0: wait for ever. Default 30000 ms. */
  connectTimeoutMs?: number;
  /** Chats to track from seq 0 (whole retained history handed out once). */
  chats?: string[];
  /** List the caller's chats after every hello and track them all. Default true. */
  trackAll?: boolean;
  /**
   * Where trackAll starts the chats of its first listing: 'start' hands out each chat's whole
   * retained history once (default), 'now' only what comes after connecting, 'unread' what the
   * user has not read. Chats that appear later are new to the client: tracked from their start.
   */
  trackFrom?: 'start' | 'now' | 'unread';
  /** Refresh the token this long before exp; default: after 80% of its lifetime. */
  refreshBeforeMs?: number;
  /** Keep at most this many message states per chat in memory. Default 5000. */
  maxKeptPerChat?: number;
}

export interface SendOptions {
  meta?: Record<string, unknown>;
  /** Client id of the send; default a fresh random id. Reuse it to resend. */
  cid?: string;
}

export interface Chat {
  id: string;
  kind: 'direct' | 'group';
  title: string;
  members: string[];
  lastSeq: number;
  createdAt: string;
  /** In listChats() only. */
  readSeq?: number;
  /** In listChats() only: each member's read position (seq), for "read by" after a reload. */
  membersRead?: Record<string, number>;
  unread?: number;
}

export interface HistoryPage {
  /** Oldest first, with their current state. */
  messages: Message[];
  /** Raw events of the page (edits, deletes, reactions included). */
  events: ChatEvent[];
  /** Whether older messages exist (for paging upward). */
  more: boolean;
}

export interface Presence { online: boolean; lastSeen?: string }

/** A `rejected` answer; code is the protocol's code. */
export class RejectedError extends Error {
  readonly name: 'RejectedError';
  readonly code: 'overloaded' | 'rate_limited' | 'forbidden' | 'not_found' | 'invalid' | 'too_large' | 'unavailable' | string;
  readonly cid: string;
  /** overloaded / rate_limited / unavailable: the same cid may succeed later. */
  readonly temporary: boolean;
}

/** A REST error answer. */
export class APIError extends Error {
  readonly name: 'APIError';
  readonly status: number;
  readonly code: string;
  /** The answer's Retry-After (429, 503), in ms. */
  readonly retryAfterMs?: number;
}

/** The client was closed (or a call needs a live connection and there is none). */
/** The token function failed before the client ever connected: a sign-in problem, not the network. */
export class TokenError extends Error {
  readonly name: 'TokenError';
  readonly cause: unknown;
}

export class ClosedError extends Error {
  readonly name: 'ClosedError';
  /** The close code that ended the client (4003 superseded, 4401 token refused, 1000 close()), if any. */
  readonly code?: number;
}

/** Human text of a close code. */
export function closeMeaning(code: number): string;

export class ChatClient {
  constructor(opts: ChatClientOptions);
  /** Subscribe; returns the unsubscribe function. */
  on<K extends keyof ChatClientEvents>(event: K, fn: (ev: ChatClientEvents[K]) => void): () => void;
  off<K extends keyof ChatClientEvents>(event: K, fn: (ev: ChatClientEvents[K]) => void): void;

  /** Current connection state. */
  readonly state: ConnState;
  /** From hello (undefined before the first). */
  readonly user: string | undefined;
  readonly device: string | undefined;

  /** Start connecting (and keep reconnecting with backoff). Resolves at the first hello;
   * rejects if the token is refused (401/4401 after a fresh token), on 4003 superseded,
   * with TokenError when the token function fails before the first hello, and with
   * ClosedError (code 0) when no hello came within connectTimeoutMs. A client that
   * rejected is closed; connect() again to retry. */
  connect(): Promise<void>;
  /** Close cleanly; pending sends reject with ClosedError. */
  close(): Promise<void>;

  /** Track a chat from afterSeq (default 0) and sync it from history when connected. */
  track(chat: string, afterSeq?: number): void;
  untrack(chat: string): void;
  /** Highest contiguous seq handed out for chat (its resume point), or undefined. */
  position(chat: string): number | undefined;
  /** The SDK's current state of a message it has handed out (undefined if not kept). */
  get(chat: string, id: string): Message | undefined;

  /** Send a message; resent with the same cid across reconnects until answered. */
  send(chat: string, body: string, opts?: SendOptions): Promise<Accepted>;
  edit(chat: string, mid: string, body: string, opts?: { cid?: string }): Promise<Accepted>;
  delete(chat: string, mid: string, opts?: { cid?: string }): Promise<Accepted>;
  react(chat: string, mid: string, emoji: string, on?: boolean, opts?: { cid?: string }): Promise<Accepted>;
  /** Tell the chat's other members this user is typing (the server passes one per 3 s per chat).
   * Best effort; false when not connected. */
  typing(chat: string): boolean;
  /** Send a read receipt up to the message at seq (or with that id). Best effort: resolves false when
   * not connected. A seq the SDK has not kept is looked up over REST. */
  markRead(chat: string, seqOrId: number | string): Promise<boolean>;

  // REST
  listChats(): Promise<Chat[]>;
  createGroup(members: string[], title?: string): Promise<Chat>;
  directChat(user: string): Promise<Chat>;
  addMember(chat: string, user: string): Promise<Chat>;
  removeMember(chat: string, user: string): Promise<void>;
  /** A page of messages with seq < before (default: the newest), at most limit (default 50), oldest first. */
  history(chat: string, opts?: { before?: number; limit?: number }): Promise<HistoryPage>;
  /** One message with its current state (GET /api/chats/{id}/messages/{mid}). */
  message(chat: string, mid: string): Promise<Message>;
  /** Who is online (at most 100 users); default: the members of the caller's chats. */
  presence(users?: string[]): Promise<Record<string, Presence>>;
}

export default ChatClient;
