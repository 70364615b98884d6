/// A counting semaphore for async code.
public actor AsyncGate {
    private let limit: Int
    private var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// A gate letting `limit` callers in at once.
    public init(limit: Int) {
        self.limit = limit
    }

    /// Waits for a place.
    public func enter() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Gives a place back.
    public func leave() {
        if waiters.isEmpty {
            running -= 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
