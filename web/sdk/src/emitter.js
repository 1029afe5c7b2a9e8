// A minimal event emitter: browsers and Node share no EventEmitter, and the
// SDK has no dependencies. A listener that throws does not stop the others;
// its error goes to the 'error' listeners (or the console when there are none).

export class Emitter {
  constructor() {
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();
  }

  /**
   * on subscribes fn to event and returns the unsubscribe function.
   * @param {string} event @param {Function} fn
   * @returns {() => void}
   */
  on(event, fn) {
    let set = this._listeners.get(event);
    if (!set) this._listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => this.off(event, fn);
  }

  /** @param {string} event @param {Function} fn */
  off(event, fn) {
    this._listeners.get(event)?.delete(fn);
  }

  /** @param {string} event @param {unknown} value */
  _emit(event, value) {
    const set = this._listeners.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(value);
      } catch (err) {
        if (event !== 'error' && this._listeners.get('error')?.size) this._emit('error', err);
        else console.error('chatd sdk: listener failed', err);
      }
    }
  }
}
