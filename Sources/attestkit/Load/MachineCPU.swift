import Foundation

/// The whole machine's CPU time from `/proc/stat` (Linux): what a load run costs beside the server's own time,
/// the kernel's work for loopback TCP, the disk's flushes and the load generator included.
struct MachineCPU {
    /// Busy time, all cores, in clock ticks (user, nice, system, irq, softirq, steal).
    let busy: UInt64
    /// Busy and idle time (idle, iowait), all cores, in clock ticks.
    let total: UInt64

    /// The counters now, or `nil` where `/proc/stat` cannot be read (not Linux).
    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return parse(text)
    }

    /// The counters of the `cpu` line of a `/proc/stat` text, or `nil` if it has none.
    static func parse(_ text: String) -> MachineCPU? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        // user nice system idle iowait irq softirq steal (guest time is already counted in user).
        guard fields.count >= 8 else { return nil }
        let idle = fields[3] + fields[4]
        let busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
        return MachineCPU(busy: busy, total: busy + idle)
    }

    /// From `start` to `self`: the busy share of all cores and the busy CPU time per request in microseconds.
    func since(_ start: MachineCPU, requests: Int) -> (busyShare: Double, microsecondsPerRequest: Double)? {
        guard total > start.total, busy >= start.busy, requests > 0, Self.ticksPerSecond > 0 else { return nil }
        let busyTicks = Double(busy - start.busy)
        let busySeconds = busyTicks / Self.ticksPerSecond
        return (busyTicks / Double(total - start.total), busySeconds * 1e6 / Double(requests))
    }

    /// The clock ticks of `/proc/stat` in a second (`USER_HZ`, 100 on Linux).
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
}
