import AttestKitServer
import Foundation
import NIOCore

/// Why `attestkit serve` could not listen, in plain words: the socket call's errno names the cause, the
/// configuration names the addresses.
enum ListenFailure {
    /// A sentence for a failure to listen; other I/O errors keep their own description.
    static func describe(_ error: IOError, configuration: ServerConfiguration) -> String {
        var addresses = ["\(configuration.host):\(configuration.port) (http.host, http.port)"]
        if let backend = configuration.backendListener {
            addresses.append("\(backend.host):\(backend.port) (http.backend-host, http.backend-port)")
        }
        let listed = addresses.joined(separator: " or ")
        switch error.errnoCode {
        case EADDRINUSE:
            return "cannot listen on \(listed): the port is already in use by another program (another attestkit "
                + "serve?). Stop it, or choose another port with --port (0 picks a free one)."
        case EACCES:
            return "cannot listen on \(listed): permission denied (ports below 1024 need privileges); "
                + "choose a port from 1024 up with --port."
        case EADDRNOTAVAIL:
            return "cannot listen on \(listed): this machine has no such address; use --host 127.0.0.1, or "
                + "0.0.0.0 for every interface."
        default:
            return "cannot listen on \(listed): \(error)"
        }
    }
}
