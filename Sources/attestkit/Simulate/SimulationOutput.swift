import AttestKitTesting
import Foundation

/// Writes what a `simulate` subcommand made into its `--out` directory.
struct SimulationOutput {
    /// The output directory.
    let directory: URL

    /// Whether to print the vector as one JSON line rather than a summary.
    let json: Bool

    init(path: String, json: Bool = false) throws {
        self.json = json
        directory = URL(fileURLWithPath: path, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private struct IndexEntry: Codable {
        var name: String
        var kind: String
        var expect: String
        var file: String
    }

    /// Writes the software Apple's two roots as PEM, `attestation-root.pem` and `receipt-root.pem`.
    func writeRoots(of apple: SoftwareApple) throws {
        try checkRoots(of: apple)
        try Data(apple.attestationRootPEM.utf8).write(to: directory.appendingPathComponent("attestation-root.pem"))
        try Data(apple.receiptRootPEM.utf8).write(to: directory.appendingPathComponent("receipt-root.pem"))
    }

    /// Writes `vector` as `NAME.json` (one JSON line), records it in `index.json`, writes both roots as PEM, and
    /// prints what was written, or the vector's JSON line with `json`.
    func write(_ vector: SimulatedVector, apple: SoftwareApple) throws {
        try writeRoots(of: apple)
        let file = "\(vector.name).json"
        let line = try vector.jsonLine()
        try Data((line + "\n").utf8).write(to: directory.appendingPathComponent(file))

        let indexURL = directory.appendingPathComponent("index.json")
        var index: [IndexEntry] = []
        if FileManager.default.fileExists(atPath: indexURL.path) {
            // An index that cannot be read is refused, never started over: its entries would be dropped unsaid.
            guard let data = try? InputFile.read(indexURL.path, limit: VerifyCommand.maximumFileBytes),
                let entries = try? JSONDecoder().decode([IndexEntry].self, from: data)
            else {
                throw SimulationFailure(
                    "\(indexURL.path) is not an index of vectors; repair or remove it, or use another --out")
            }
            index = entries
        }
        index.removeAll { $0.name == vector.name }
        index.append(IndexEntry(name: vector.name, kind: vector.kind, expect: vector.expect, file: file))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(index).write(to: indexURL)

        if json {
            print(line)
            return
        }
        print("\(vector.kind) \(vector.name): expect \(vector.expect)")
        if let keyId = vector.keyId { print("keyId \(keyId)") }
        print(
            "wrote \(directory.appendingPathComponent(file).path), attestation-root.pem, receipt-root.pem, index.json")
    }

    /// Refuses to mix the vectors of two software Apples in one directory: the roots beside them would verify
    /// only the newest.
    private func checkRoots(of apple: SoftwareApple) throws {
        let existing = directory.appendingPathComponent("attestation-root.pem")
        guard let data = try? Data(contentsOf: existing) else { return }
        guard String(decoding: data, as: UTF8.self) == apple.attestationRootPEM else {
            throw SimulationFailure(
                "\(directory.path) holds vectors of another software Apple; pass the same --state FILE to every "
                    + "simulate call that writes there, or use another --out")
        }
    }
}
