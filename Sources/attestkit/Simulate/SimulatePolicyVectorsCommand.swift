import ArgumentParser
import AttestKitTesting
import Foundation

/// `attestkit simulate policy-vectors`: writes the software Apple's policy vectors (``PolicyVectors``).
struct SimulatePolicyVectorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy-vectors",
        abstract: "Write the iOS 27 policy vectors of the software Apple (test CA, never Apple's).",
        discussion: """
            Attestations and assertions for a device before iOS 27, every validation category, bundle versions \
            ordered differently as text and as versions, a macOS key and a change of category, each with its \
            expected outcome under a stated policy. Repeatable: a fixed seed and time give the same keys, \
            authenticator data and outcomes (only the ECDSA signatures differ). Replaces the set in --out: \
            index.json, attestation/, assertion/ and the two roots. The repository's copy is \
            Tests/AttestKitTests/SimulatedVectors; check a set with: attestkit verify --vectors OUT \
            --attestation-root OUT/attestation-root.pem --receipt-root OUT/receipt-root.pem.
            """
    )

    @Option(name: .long, help: "The directory to write the set into.")
    var out: String

    func run() async throws {
        let directory = URL(fileURLWithPath: out, isDirectory: true)
        let manager = FileManager.default
        for kind in ["attestation", "assertion"] {
            let folder = directory.appendingPathComponent(kind, isDirectory: true)
            try? manager.removeItem(at: folder)
            try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let files = try PolicyVectors.generate().files()
        for file in files {
            try Data(file.contents).write(to: directory.appendingPathComponent(file.path))
        }
        print("wrote \(files.count - 3) policy vectors, index.json and both roots to \(directory.path)")
    }
}
