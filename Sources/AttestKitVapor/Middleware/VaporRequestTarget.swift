import Vapor

/// The request target a Vapor request was sent with, as far as Vapor keeps it.
///
/// Vapor does not keep the request line: it parses the target into `req.url` (Foundation's `URLComponents`), and
/// `req.url.string` gives the path and query back as they were sent, percent-encoding, case of the hex digits and
/// parameter order preserved, with one exception: where Foundation does not count `;` as allowed in a path (Linux,
/// older Apple SDKs), Vapor writes every `%3B` of the path as `;`. A path holding `;` may therefore have been sent
/// either way, so the candidates are the target as Vapor gives it and, when its path holds a `;`, the same target
/// with every `;` of the path spelled `%3B`. A path that mixed both spellings verifies under neither, and is refused
/// (403 `signature_invalid`) rather than guessed at. Vapor also folds a path's leading `//` into `/`; such a target
/// is bound (and routed) as Vapor reads it.
enum VaporRequestTarget {
    /// The targets `url` may have been sent as, the one Vapor gives first; at most two.
    static func candidates(of url: URI) -> [String] {
        let target = url.string
        let pathEnd = target.firstIndex(of: "?") ?? target.endIndex
        let path = target[..<pathEnd]
        guard path.contains(";") else { return [target] }
        return [target, String(path.replacing(";", with: "%3B") + target[pathEnd...])]
    }
}
