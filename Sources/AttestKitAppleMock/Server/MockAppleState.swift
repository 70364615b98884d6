public import AttestKitApple
import AttestKitTesting
import Foundation

/// What the mock remembers: two bits and the month of their last update per team and device, as Apple keeps them
/// (a team reads and writes its own bits only: another team's token finds no bit state; a simulated device's tokens
/// name their device, `SimulatedDeviceToken`; any other token is a device of its own), the faults still to
/// inject, and how many requests each endpoint received. In memory only: a restarted mock starts empty.
public actor MockAppleState {
    /// A team's stored bits for a device.
    public struct Bits: Sendable, Hashable {
        /// Bit 0.
        public var bit0: Bool
        /// Bit 1.
        public var bit1: Bool
        /// The month of the last update.
        public var lastUpdateTime: DeviceCheckMonth
    }

    /// The bits by team (the provider token's `iss`) and device (``device(of:)``).
    private var bits: [BitsKey: Bits] = [:]
    private var faults: [MockAppleFault] = []
    private var requests: [MockAppleEndpoint: Int] = [:]
    private var trades: [[UInt8]: Int] = [:]
    private var inFlight: [MockAppleEndpoint: Int] = [:]
    private var mostInFlight: [MockAppleEndpoint: Int] = [:]
    private var arrivalTimes: [MockAppleEndpoint: [ContinuousClock.Instant]] = [:]

    /// The most arrival times kept per endpoint (the latest).
    public static let maximumArrivalTimes = 10_000

    /// Creates a state with faults to inject; those the mock cannot play (a status outside
    /// ``MockAppleFault/statuses``) are left out, as ``inject(_:)`` refuses them.
    public init(faults: [MockAppleFault] = []) {
        self.faults = faults.filter { (try? $0.validate()) != nil }
    }

    /// Where bits are kept: Apple keeps two bits per device for each developer team.
    private struct BitsKey: Hashable {
        var team: String
        var device: String
    }

    /// The bits the team `teamID` stored for the device of `deviceToken`, or `nil` when that team never set them
    /// (another team's bits for the same device are not its).
    ///
    /// - Parameters:
    ///   - deviceToken: A device token, Base64.
    ///   - teamID: The team, as provider tokens name it in `iss`.
    public func bits(for deviceToken: String, team teamID: String) -> Bits? {
        bits[BitsKey(team: teamID, device: Self.device(of: deviceToken))]
    }

    /// Updates the given bits the team `teamID` keeps for the device of `deviceToken` (a bit left `nil` keeps its
    /// value, `false` when never set) and records `month` as the last update.
    ///
    /// - Parameters:
    ///   - deviceToken: A device token, Base64.
    ///   - teamID: The team, as provider tokens name it in `iss`.
    ///   - bit0: The new bit 0, or `nil` to keep it.
    ///   - bit1: The new bit 1, or `nil` to keep it.
    ///   - month: The month of the update.
    public func update(_ deviceToken: String, team teamID: String, bit0: Bool?, bit1: Bool?, month: DeviceCheckMonth) {
        let key = BitsKey(team: teamID, device: Self.device(of: deviceToken))
        let previous = bits[key]
        bits[key] = Bits(
            bit0: bit0 ?? previous?.bit0 ?? false, bit1: bit1 ?? previous?.bit1 ?? false, lastUpdateTime: month)
    }

    /// The device a token comes from, as the bits are kept by: the identifier a simulated device's token names
    /// (`SimulatedDeviceToken`), else the token's bytes (each other token a device of its own).
    static func device(of deviceToken: String) -> String {
        guard let bytes = Data(base64Encoded: deviceToken) else { return "token:" + deviceToken }
        if let device = SimulatedDeviceToken.device(of: bytes) {
            return "device:" + device.map { String($0, radix: 16) }.joined(separator: ".")
        }
        return "token:" + bytes.base64EncodedString()
    }

    /// Adds faults after those still pending, unless one of them cannot be played (a status outside
    /// ``MockAppleFault/statuses``, which no HTTP answer carries): then none is added, and the refusal is returned.
    ///
    /// - Returns: `nil` when the faults were added, else the ``MockAppleError/Code/invalidConfiguration`` that
    ///   refused them all.
    @discardableResult
    public func inject(_ faults: MockAppleFault...) -> MockAppleError? {
        do {
            for fault in faults { try fault.validate() }
        } catch {
            return error
        }
        self.faults += faults
        return nil
    }

    /// Drops every pending fault.
    public func clearFaults() {
        faults.removeAll()
    }

    /// The faults still pending, with their remaining counts.
    public var pendingFaults: [MockAppleFault] { faults }

    /// How many requests `endpoint` received, faulty ones included.
    public func requestCount(_ endpoint: MockAppleEndpoint) -> Int { requests[endpoint, default: 0] }

    /// The most requests to `endpoint` that were being answered at once (from arrival to answer, an injected
    /// delay included): how many calls a client had in flight.
    public func maximumInFlight(_ endpoint: MockAppleEndpoint) -> Int { mostInFlight[endpoint, default: 0] }

    /// When the requests to `endpoint` arrived, oldest first (at most ``maximumArrivalTimes``, the latest).
    public func arrivals(_ endpoint: MockAppleEndpoint) -> [ContinuousClock.Instant] {
        arrivalTimes[endpoint, default: []]
    }

    /// Counts a request to `endpoint` answered.
    func depart(from endpoint: MockAppleEndpoint) {
        inFlight[endpoint, default: 1] -= 1
    }

    /// How many times the receipts of each key were traded for a new one (answers 200 of the receipt exchange),
    /// by the key's credential certificate (DER): one entry per key.
    public var receiptTrades: [[UInt8]: Int] { trades }

    /// Counts a receipt traded for the key of this credential certificate.
    func traded(_ certificate: [UInt8]) {
        trades[certificate, default: 0] += 1
    }

    /// Counts a request to `endpoint` (in flight until ``depart(from:)``) and takes the first pending fault that applies to it, if any.
    func arrive(at endpoint: MockAppleEndpoint) -> MockAppleFault.Action? {
        requests[endpoint, default: 0] += 1
        inFlight[endpoint, default: 0] += 1
        mostInFlight[endpoint] = max(mostInFlight[endpoint, default: 0], inFlight[endpoint, default: 0])
        arrivalTimes[endpoint, default: []].append(.now)
        if arrivalTimes[endpoint, default: []].count > Self.maximumArrivalTimes {
            arrivalTimes[endpoint]?.removeFirst()
        }
        guard let index = faults.firstIndex(where: { $0.applies(to: endpoint) }) else { return nil }
        let action = faults[index].action
        faults[index].count -= 1
        if faults[index].count <= 0 { faults.remove(at: index) }
        return action
    }
}
