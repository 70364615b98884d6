import AttestKitFlows
import HTTPTypes
import NIOCore

extension ClientAddress {
    /// The rate-limit key of a Hummingbird request from `peer` with `headers` (``ClientAddress``, in the flows).
    func rateLimitKey(peer: SocketAddress?, headers: HTTPFields) -> String {
        rateLimitKey(peer: peer?.ipAddress, headers: Self.lookup(headers))
    }

    /// The values of every line of a header, by name.
    static func lookup(_ headers: HTTPFields) -> (String) -> [String] {
        { name in HTTPField.Name(name).map { headers[values: $0] } ?? [] }
    }
}
