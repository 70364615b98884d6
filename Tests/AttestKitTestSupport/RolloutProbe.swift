import AttestKit
import Crypto
/// Sends requests of many rollout subjects, each twice, through a guarded route and sums up what the guard did, for
/// the rollout tests of every middleware.
public enum RolloutProbe {
    /// What the requests found.
    public struct Result: Sendable {
        /// The share of subjects whose requests were refused (enforced).
        public let share: Double
        /// Subjects answered differently the second time.
        public let flipped: [String]
        /// Subjects enforced where the rollout leaves them out, or the reverse.
        public let misplaced: [String]
    }

    /// Sends a request for each of `count` subjects twice; `refused` sends one and says whether it was refused,
    /// `includes` is the rollout's own answer for a subject.
    public static func run(
        subjects count: Int, includes: (String) -> Bool, refused: (String) async throws -> Bool
    ) async throws -> Result {
        var enforced = 0
        var flipped: [String] = []
        var misplaced: [String] = []
        for index in 0..<count {
            let subject = "subject-\(index)"
            let first = try await refused(subject)
            if try await refused(subject) != first { flipped.append(subject) }
            if first != includes(subject) { misplaced.append(subject) }
            if first { enforced += 1 }
        }
        return Result(share: Double(enforced) / Double(max(count, 1)), flipped: flipped, misplaced: misplaced)
    }

    /// A key id for `subject` in its one canonical spelling (standard padded Base64 of the SHA-256 of the subject):
    /// what a rollout by key id places, since a key id in another spelling names no subject.
    public static func keyText(_ subject: String) -> String {
        let digest = SHA256.hash(data: Array(subject.utf8))
        return (try? KeyID(bytes: Array(digest)))?.base64 ?? ""
    }
}
