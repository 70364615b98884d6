import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// Record and replay: every failed verification writes a bundle, and replaying it offline fails with the same code.
struct RecordingTests {
    /// A fresh directory under the temporary directory (not created: the recorder creates it).
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-record-\(UUID().uuidString)").path
    }

    static func recorder(
        _ directory: String = directory(), count: Int = 1_000, policy: DeploymentPolicy? = nil
    ) throws -> VerificationRecorder {
        try VerificationRecorder(directory: directory, maximumCount: count, policy: policy)
    }

    /// The bundles `recorder` kept, oldest first, read back from disk.
    static func bundles(_ recorder: VerificationRecorder) async throws -> [VerificationBundle] {
        var bundles: [VerificationBundle] = []
        for name in await recorder.bundleNames() {
            let data = try Data(contentsOf: URL(fileURLWithPath: recorder.directory + "/" + name))
            bundles.append(try VerificationBundle(json: Array(data)))
        }
        return bundles
    }

    /// Replays the one bundle `recorder` holds and checks it fails with `code` as recorded.
    static func expectReplay(_ recorder: VerificationRecorder, code: String) async throws -> VerificationReplay.Result {
        let bundles = try await bundles(recorder)
        #expect(bundles.count == 1)
        let bundle = try #require(bundles.first)
        #expect(bundle.outcome.code == code)
        let result = try await VerificationReplay.replay(bundle)
        #expect(result.outcome?.code == code)
        #expect(result.reproduces)
        return result
    }

    @Test("a clock outside the window is recorded, and its replay names the skew; moved into the window it verifies")
    func clockSkew() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(timestampWindow: 60, recorder: recorder)
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(
            freshness: .timestamp(milliseconds: FlowBench.milliseconds(64)))
        await #expect(throws: FlowError.timestampOutsideWindow) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        let result = try await Self.expectReplay(recorder, code: "timestamp_outside_window")
        #expect(result.outcome?.check == "freshness")
        #expect(result.outcome?.reason.contains("64 s from the server's clock") == true)
        // The same inputs four seconds later in time (inside the window) verify: the replay really re-runs.
        var moved = result.bundle
        moved.verificationTime += 4
        #expect(try await VerificationReplay.replay(moved).outcome == nil)
        // A time no clock gives (a hand-edited bundle) is not a bundle, never a crash.
        for time in [1e19, -1e19, -1, 253_402_300_800] {
            var edited = result.bundle
            edited.verificationTime = time
            let encoded = try edited.encoded()
            let error = await #expect(throws: FlowError.self) {
                try await VerificationReplay.replay(try VerificationBundle(json: encoded))
            }
            #expect(error?.code == .bundleInvalid, "\(time)")
        }
    }

    @Test("a tampered body, a replayed assertion, an unknown and a revoked key are recorded and replay to their codes")
    func assertionFailures() async throws {
        let now = FlowBench.milliseconds()
        // A body changed after signing: the signature is over another body.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = try await bench.registeredDevice()
            let (assertion, _) = try device.assertion(freshness: .timestamp(milliseconds: now))
            let tampered = try AssertionBinding(
                method: "POST", target: "/orders", body: Array("{\"x\":1}".utf8), freshness: .timestamp(milliseconds: now))
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: tampered)
            }
            let result = try await Self.expectReplay(recorder, code: "signature_invalid")
            #expect(result.outcome?.check == "signature")
        }
        // The same assertion twice: the second is refused by the counter, and so is its replay.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = try await bench.registeredDevice()
            let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: now))
            _ = try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            #expect(await recorder.bundleNames().isEmpty, "an accepted assertion writes nothing")
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            }
            let result = try await Self.expectReplay(recorder, code: "counter_not_increasing")
            #expect(result.bundle.assertion?.key?.counter == 1)
        }
        // An unknown key, then a revoked one.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = try await FlowBench().registeredDevice()
            let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: now))
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            }
            let result = try await Self.expectReplay(recorder, code: "key_not_found")
            #expect(result.bundle.assertion?.key == nil)
        }
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = try await bench.registeredDevice()
            _ = try await bench.store.revokeKey(device.keyID, now: Date())
            let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: now))
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            }
            let result = try await Self.expectReplay(recorder, code: "key_revoked")
            #expect(result.bundle.assertion?.key?.state == "revoked")
        }
    }

    @Test("a consumed challenge is the store's answer: recorded at its step and answered again by the replay")
    func storeAnswer() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let device = try await bench.registeredDevice()
        let challenge = try await bench.issuer.issue(purpose: .assert, keyID: device.keyID)
        let first = try device.assertion(freshness: .challenge(challenge.id.string))
        _ = try await bench.gate.verify(keyID: device.keyID, assertion: first.assertion, binding: first.binding)
        let second = try device.assertion(freshness: .challenge(challenge.id.string))
        await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: second.assertion, binding: second.binding)
        }
        let result = try await Self.expectReplay(recorder, code: "challenge_consumed")
        #expect(result.bundle.assertion?.storeAnswer == RecordedStoreAnswer(step: .challenge, code: "challenge_consumed"))
        // Without the store's refusal, the second assertion itself verifies (counter 2 over 1).
        var unrefused = result.bundle
        unrefused.assertion?.storeAnswer = nil
        #expect(try await VerificationReplay.replay(unrefused).outcome == nil)
    }

    @Test("a wrong team, a policy refusal and a known key are recorded and replay to their codes")
    func attestationFailures() async throws {
        // An app of another team: the rpIdHash is not one of the deployment's apps.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let stranger = bench.device(appID: try AppID("ZZZZZ99999.com.example.app"))
            await #expect(throws: FlowError.self) { try await bench.register(stranger) }
            let result = try await Self.expectReplay(recorder, code: "app_id_mismatch")
            #expect(result.bundle.configuration.appIds == ["ABCDE12345.com.example.app"])
            #expect(result.bundle.configuration.attestationRoot?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
            // Replayed for the stranger's app, the same object verifies.
            var forStranger = result.bundle
            forStranger.configuration.appIds = ["ZZZZZ99999.com.example.app"]
            #expect(try await VerificationReplay.replay(forStranger).outcome == nil)
        }
        // The deployment's policy refuses validation category 1; the recorded policy refuses it again.
        do {
            let policy = DeploymentPolicy(allowedValidationCategories: [2])
            let recorder = try Self.recorder(policy: policy)
            let bench = try FlowBench(recorder: recorder)
            await #expect(throws: FlowError.self) {
                try await bench.register(bench.device(validationCategory: 1), policy: policy.attestationPolicy)
            }
            let result = try await Self.expectReplay(recorder, code: "policy_validation_category")
            #expect(result.outcome?.check == "policy")
            // The replay re-runs the recorded policy: without the restriction, the same object verifies.
            var allowed = result.bundle
            allowed.configuration.allowedValidationCategories = nil
            #expect(try await VerificationReplay.replay(allowed).outcome == nil)
        }
        // A key registered before: the store's answer at the key step.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = bench.device()
            let twin = try device.twin()
            let first = try await bench.issuer.issue(purpose: .attest)
            let attestation = try device.device.attestKey(
                device.keyID, clientDataHash: Array(SHA256.hash(data: first.bytes)))
            _ = try await bench.registrar().register(
                keyID: device.keyID, attestation: attestation, challengeID: first.id, now: Date())
            // A second genuine attestation of the key: verified, then refused at the key step.
            let second = try await bench.issuer.issue(purpose: .attest)
            let again = try twin.device.attestKey(device.keyID, clientDataHash: Array(SHA256.hash(data: second.bytes)))
            await #expect(throws: FlowError.self) {
                try await bench.registrar().register(
                    keyID: device.keyID, attestation: again, challengeID: second.id, now: Date())
            }
            let result = try await Self.expectReplay(recorder, code: "key_exists")
            #expect(result.bundle.attestation?.storeAnswer?.step == .key)
        }
        // An unknown challenge: no challenge bytes were handed out.
        do {
            let recorder = try Self.recorder()
            let bench = try FlowBench(recorder: recorder)
            let device = bench.device()
            let unknown = try ChallengeID(bytes: [UInt8](repeating: 7, count: 16))
            let attestation = try device.device.attestKey(device.keyID, clientDataHash: [UInt8](repeating: 1, count: 32))
            await #expect(throws: FlowError.self) {
                try await bench.registrar().register(
                    keyID: device.keyID, attestation: attestation, challengeID: unknown, now: Date())
            }
            let result = try await Self.expectReplay(recorder, code: "challenge_not_found")
            #expect(result.bundle.attestation?.challenge == nil)
        }
    }

    @Test("refusals that are not verifications are not recorded: a spent budget, an unavailable store")
    func notRecorded() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let device = bench.device()
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let attestation = try device.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        await #expect(throws: FlowError.self) {
            try await bench.registrar().register(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: Date()
            ) { _ throws(FlowError) in throw FlowError.rateLimited("attestations per app", retryAfter: 5) }
        }
        #expect(VerificationRecorder.records(FlowError(StoreError.storageUnavailable)) == false)
        #expect(await recorder.bundleNames().isEmpty)
    }

    /// Recording that unauthenticated traffic cannot flush: with a known-key quota of N and an unknown quota of M,
    /// N + k refusals of unknown keys and malformed input never evict a known key's bundle; they evict only each
    /// other, and a quota of 0 records none of them.
    @Test("garbage refusals have their own quota and never evict a known key's bundle")
    func garbageCannotFlushTheEvidence() async throws {
        let directory = Self.directory()
        let recorder = try VerificationRecorder(directory: directory, maximumCount: 2, unknownMaximumCount: 3)
        let bench = try FlowBench(timestampWindow: 1, recorder: recorder)
        let device = try await bench.registeredDevice()
        // A known key's refusal: its clock is 30 s off.
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds(30)))
        await #expect(throws: FlowError.timestampOutsideWindow) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        let evidence = try #require(await recorder.bundleNames().first)
        #expect(!evidence.hasSuffix("-unknown.json"))

        // Twice the known quota and more of what anyone can send: unknown keys, malformed attestations.
        for round in 0..<6 {
            let stranger = bench.device()
            let garbage = [UInt8](repeating: UInt8(round), count: 40)
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: stranger.keyID, assertion: garbage, binding: binding)
            }
            let challenge = try await bench.issuer.issue(purpose: .attest)
            await #expect(throws: FlowError.self) {
                try await bench.registrar().register(
                    keyID: stranger.keyID, attestation: garbage, challengeID: challenge.id, now: Date())
            }
        }
        let names = await recorder.bundleNames()
        #expect(names.contains(evidence))
        #expect(names.filter { $0.hasSuffix("-unknown.json") }.count == 3)
        #expect(names.count == 4)
        let bundles = try await Self.bundles(recorder)
        #expect(
            bundles.allSatisfy {
                VerificationRecorder.Quota(of: $0) == ($0.assertion?.key == nil ? .unknown : .known)
            })

        // A second known refusal fits the known quota; a third evicts the oldest known one, never an unknown one.
        for seconds in [40.0, 50] {
            let (late, lateBinding) = try device.assertion(
                freshness: .timestamp(milliseconds: FlowBench.milliseconds(seconds)))
            await #expect(throws: FlowError.timestampOutsideWindow) {
                try await bench.gate.verify(keyID: device.keyID, assertion: late, binding: lateBinding)
            }
        }
        let after = await recorder.bundleNames()
        #expect(!after.contains(evidence))
        #expect(after.filter { !$0.hasSuffix("-unknown.json") }.count == 2)
        #expect(after.filter { $0.hasSuffix("-unknown.json") } == names.filter { $0.hasSuffix("-unknown.json") })

        // A recorder reopened on the directory tells the quotas apart by name.
        let reopened = try VerificationRecorder(directory: directory, maximumCount: 2, unknownMaximumCount: 1)
        let unknownBundle = try #require(bundles.first { $0.assertion?.key == nil })
        #expect(await reopened.record(unknownBundle) != nil)
        let reopenedNames = await reopened.bundleNames()
        #expect(reopenedNames.filter { $0.hasSuffix("-unknown.json") }.count == 1)
        let known = { (names: [String]) in names.filter { !$0.hasSuffix("-unknown.json") } }
        #expect(known(reopenedNames) == known(after))

        // An unknown quota of 0 records none of them.
        let silent = try VerificationRecorder(directory: Self.directory(), unknownMaximumCount: 0)
        #expect(await silent.record(unknownBundle) == nil)
        #expect(await silent.bundleNames().isEmpty)
        #expect(throws: FlowError.self) {
            try VerificationRecorder(directory: Self.directory(), unknownMaximumCount: -1)
        }
    }

    /// Anyone can send refused assertions naming a registered key (their own device's, or a key id they saw): one key
    /// keeps at most its share of the known quota, so a flood naming it replaces only its own bundles.
    @Test("one known key's flood replaces its own bundles, never another key's evidence")
    func oneKeyCannotFlushTheEvidence() async throws {
        let recorder = try VerificationRecorder(directory: Self.directory(), maximumCount: 5, maximumPerKey: 2)
        let bench = try FlowBench(timestampWindow: 1, recorder: recorder)
        let victim = try await bench.registeredDevice()
        let flooder = try await bench.registeredDevice()
        func refuse(_ device: FlowBench.Device, offBy seconds: Double) async throws {
            let (assertion, binding) = try device.assertion(
                freshness: .timestamp(milliseconds: FlowBench.milliseconds(seconds)))
            await #expect(throws: FlowError.timestampOutsideWindow) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            }
        }
        try await refuse(victim, offBy: 30)
        let evidence = try #require(await recorder.bundleNames().first)
        try await refuse(flooder, offBy: 31)
        let flooderFirst = try #require(await recorder.bundleNames().last)
        for seconds in 32..<43 { try await refuse(flooder, offBy: Double(seconds)) }
        let names = await recorder.bundleNames()
        #expect(names.count == 3 && names.first == evidence && !names.contains(flooderFirst), "\(names)")
        let kept = try await Self.bundles(recorder)
        #expect(kept.map { $0.assertion?.keyId } == [victim.keyID.base64, flooder.keyID.base64, flooder.keyID.base64])

        // Every key within its share, the quota still holds: the oldest go first, whoever they belong to.
        for device in [try await bench.registeredDevice(), try await bench.registeredDevice()] {
            try await refuse(device, offBy: 30)
        }
        let full = await recorder.bundleNames()
        #expect(full.count == 5 && full.first == evidence)
        try await refuse(try await bench.registeredDevice(), offBy: 30)
        #expect(await recorder.bundleNames().contains(evidence) == false)

        for perKey in [0, 6] {
            #expect(throws: FlowError.self) {
                try VerificationRecorder(directory: Self.directory(), maximumCount: 5, maximumPerKey: perKey)
            }
        }
        #expect(try VerificationRecorder(directory: Self.directory(), maximumCount: 3).maximumPerKey == 3)
        #expect(try VerificationRecorder(directory: Self.directory()).maximumPerKey == 10)
    }

    @Test("bundles are files of mode 0600 in a directory of mode 0700, bounded in count, oldest removed first")
    func filesAndBounds() async throws {
        let directory = Self.directory()
        let recorder = try Self.recorder(directory, count: 3)
        let bench = try FlowBench(timestampWindow: 1, recorder: recorder)
        let device = try await bench.registeredDevice()
        var freshness: [String] = []
        for offset in 1...5 {
            let milliseconds = FlowBench.milliseconds(Double(10 * offset))
            freshness.append("timestamp:\(milliseconds)")
            let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: milliseconds))
            await #expect(throws: FlowError.self) {
                try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
            }
        }
        let names = await recorder.bundleNames()
        #expect(names.count == 3)
        #expect(try await Self.bundles(recorder).map { $0.assertion?.freshness } == Array(freshness.suffix(3)))
        let listed = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(listed == names)
        for name in names {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        // A new recorder on the same directory sees the bundles and keeps the bound; other files are left alone.
        #expect(FileManager.default.createFile(atPath: directory + "/notes.txt", contents: Data("keep".utf8)))
        let reopened = try Self.recorder(directory, count: 2)
        #expect(await reopened.bundleNames() == names)
        let bundle = try #require(try await Self.bundles(recorder).last)
        #expect(await reopened.record(bundle) != nil)
        #expect(await reopened.bundleNames().count == 2)
        #expect(FileManager.default.fileExists(atPath: directory + "/notes.txt"))
        #expect(throws: FlowError.self) { try VerificationRecorder(directory: directory + "/notes.txt") }
        #expect(throws: FlowError.self) { try VerificationRecorder(directory: directory, maximumCount: 0) }

        // A directory gone from under the recorder: the bundle is not kept, and counted.
        let metrics = RecordingMetrics()
        let gone = Self.directory()
        let orphan = try VerificationRecorder(directory: gone, metrics: FlowMetrics(factory: metrics))
        try FileManager.default.removeItem(atPath: gone)
        #expect(await orphan.record(bundle) == nil)
        #expect(metrics.count("attestkit_verification_bundles_dropped_total", ["reason": "unwritable"]) == 1)
    }

    @Test("a bundle is read strictly: every truncation, another format, mixed kinds and bad fields are bundle_invalid")
    func strictBundles() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let device = try await FlowBench().registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        let bundle = try #require(try await Self.bundles(recorder).first)
        let json = try bundle.encoded()
        for length in 0..<json.count {
            #expect(throws: FlowError.self) { try VerificationBundle(json: json[..<length]) }
        }
        #expect(try VerificationBundle(json: json) == bundle)
        var other = bundle
        other.format = 2
        #expect(throws: FlowError.self) { try VerificationBundle(json: try other.encoded()) }
        other = bundle
        other.kind = .attestation
        #expect(throws: FlowError.self) { try VerificationBundle(json: try other.encoded()) }
        for change in [
            { (b: inout VerificationBundle) in b.assertion?.assertion = "not base64!" },
            { (b: inout VerificationBundle) in b.assertion?.keyId = "AAAA" },
            { (b: inout VerificationBundle) in b.assertion?.freshness = "sometime" },
            { (b: inout VerificationBundle) in b.assertion?.clientDataHash = "AAAA" },
            { (b: inout VerificationBundle) in b.assertion?.storeAnswer = RecordedStoreAnswer(step: .counter, code: "nope") },
            { (b: inout VerificationBundle) in b.configuration.timestampWindow = -1 },
        ] {
            var changed = bundle
            change(&changed)
            await #expect(throws: FlowError.self) { try await VerificationReplay.replay(changed) }
        }
        #expect(throws: FlowError.self) {
            try VerificationBundle(json: [UInt8](repeating: 0x20, count: VerificationBundle.maximumBytes + 1))
        }
    }
}
