import Foundation
import SwiftASN1
import Testing
import X509

@testable import AttestKit

/// The key access-control extension (1.2.840.113635.100.8.6): the real leaves that carry it, Apple's documented macOS
/// policy, and every truncation, bit flip and trailing byte of both.
@Suite struct KeyAccessControlTests {
    /// The real leaves of the vectors that carry the extension: Apple's 2026 sample (iOS 27.0), a 2026 iOS 26.3 device
    /// and an iOS 26.2 device. All carry the same value.
    static let realVectors = [
        "apple_doc_sample_2026_prod_attestation", "worldcoin_2026-02-25_QSMxLJ_dev_attestation",
        "mikedan_decoder_dev_attestation_PARSE_ONLY",
    ]

    static func leaf(_ name: String) throws -> Certificate {
        try Certificate(derEncoded: try AttestationObject(bytes: TestVectors.named(name).bytes).certificates[0])
    }

    /// The extension value of the real leaves.
    static func realValue() throws -> [UInt8] {
        let leaf = try leaf(realVectors[0])
        return Array(try #require(leaf.extensions.first { $0.oid == AppAttestKeyAccessControl.oid }).value)
    }

    /// Apple's macOS policy wrapped as a leaf wraps its policy.
    static func macOSValue() throws -> [UInt8] {
        try AppAttestKeyAccessControl(policy: AppAttestKeyAccessControl.macOSFullSecurityPolicy).extensionValue
    }

    @Test("the real leaves of 2026 carry iOS's policy: version 11, five operations, not the macOS policy")
    func realLeaves() throws {
        for name in Self.realVectors {
            let reading = AppAttestKeyAccessControl.reading(of: try Self.leaf(name))
            let accessControl = try #require(reading.accessControl, "\(name)")
            #expect(accessControl.version == "11")
            #expect(accessControl.operations.map(\.name) == ["okd", "oa", "osgn", "odel", "ock"])
            #expect(accessControl.operations.allSatisfy { $0.constraint == [0xA1, 0x03, 0x01, 0x01, 0xFF] })
            #expect(accessControl.policy.count == 69)
            #expect(accessControl.extensionValue.count == 75)
            #expect(!accessControl.isMacOSFullSecurityPolicy)
        }
    }

    @Test("leaves before 2026 have no extension")
    func olderLeaves() throws {
        #expect(AppAttestKeyAccessControl.reading(of: try Self.leaf("veehaitch_ios-14.2_attestation")) == .absent)
        #expect(AppAttestKeyAccessControl.reading(of: try Self.leaf("warden_ios17_iphone15_dev_attestation")) == .absent)
    }

    @Test("Apple's documented macOS policy: its Base64 and its structure")
    func macOSPolicy() throws {
        #expect(
            Data(AppAttestKeyAccessControl.macOSFullSecurityPolicy).base64EncodedString()
                == "MEAMAjExMDowCQwCb2uhAwEB/zAJDAJvYaEDAQH/MAsMBG9kZWyhAwEB/zAVDARvc2duoAYMBHJzZWMwBaYDAgEB")
        let parsed = try AppAttestKeyAccessControl(extensionValue: try Self.macOSValue())
        #expect(parsed.isMacOSFullSecurityPolicy)
        #expect(parsed.version == "11")
        #expect(parsed.operations.map(\.name) == ["ok", "oa", "odel", "osgn"])
        #expect(parsed.operations[3].constraint == [0xA0, 0x06, 0x0C, 0x04, 0x72, 0x73, 0x65, 0x63, 0x30, 0x05, 0xA6, 0x03, 0x02, 0x01, 0x01])
        // The value a macOS leaf carries: SEQUENCE { [3] { OCTET STRING (66 bytes) } }.
        #expect(Array(parsed.extensionValue.prefix(6)) == [0x30, 0x46, 0xA3, 0x44, 0x04, 0x42])
    }

    @Test("every truncation of a valid value is key_access_control_malformed", arguments: [false, true])
    func everyTruncation(macOS: Bool) throws {
        let value = macOS ? try Self.macOSValue() : try Self.realValue()
        for length in 0..<value.count {
            #expect(throws: AttestKitError.code(.keyAccessControlMalformed), "prefix \(length)") {
                try AppAttestKeyAccessControl(extensionValue: Array(value.prefix(length)))
            }
        }
        _ = try AppAttestKeyAccessControl(extensionValue: value)
    }

    @Test("a trailing byte, inside or outside the policy, is refused", arguments: [false, true])
    func trailingBytes(macOS: Bool) throws {
        let value = macOS ? try Self.macOSValue() : try Self.realValue()
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) {
            try AppAttestKeyAccessControl(extensionValue: value + [0x00])
        }
        let policy = try AppAttestKeyAccessControl(extensionValue: value).policy
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) {
            try AppAttestKeyAccessControl(policy: policy + [0x00])
        }
    }

    @Test("every single bit flip parses or is key_access_control_malformed; only the original is the macOS policy")
    func everyBitFlip() throws {
        for value in [try Self.macOSValue(), try Self.realValue()] {
            for index in value.indices {
                for bit in 0..<8 {
                    var flipped = value
                    flipped[index] ^= UInt8(1) << UInt8(bit)
                    do {
                        let parsed = try AppAttestKeyAccessControl(extensionValue: flipped)
                        #expect(!parsed.isMacOSFullSecurityPolicy, "byte \(index) bit \(bit)")
                        #expect(parsed.extensionValue == flipped)
                    } catch {
                        #expect(error.code == .keyAccessControlMalformed, "byte \(index) bit \(bit)")
                    }
                }
            }
        }
    }

    @Test("other shapes are refused: another OID, another tag, no operations, a repeated operation, too many")
    func otherShapes() throws {
        let ext = Certificate.Extension(oid: AppAttestNonceExtension.oid, critical: false, value: try Self.macOSValue()[...])
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) { try AppAttestKeyAccessControl(ext) }
        // [1] instead of [3] around the policy.
        var retagged = try Self.macOSValue()
        retagged[2] = 0xA1
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) {
            try AppAttestKeyAccessControl(extensionValue: retagged)
        }
        func policy(_ operations: [[UInt8]]) -> [UInt8] {
            let list = operations.flatMap { $0 }
            return [0x30, UInt8(list.count + 6), 0x0C, 0x02, 0x31, 0x31, 0x30, UInt8(list.count)] + list
        }
        let allowed: [UInt8] = [0x30, 0x09, 0x0C, 0x02, 0x6F, 0x61, 0xA1, 0x03, 0x01, 0x01, 0xFF]
        let bare: [UInt8] = [0x30, 0x04, 0x0C, 0x02, 0x6F, 0x62]
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) { try AppAttestKeyAccessControl(policy: policy([])) }
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) {
            try AppAttestKeyAccessControl(policy: policy([allowed, allowed]))
        }
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) { try AppAttestKeyAccessControl(policy: policy([bare])) }
        _ = try AppAttestKeyAccessControl(policy: policy([allowed]))
        // 33 distinct operations (the bound is 32), in a long-form length.
        let many = (0..<33).map { number -> [UInt8] in
            [0x30, 0x0A, 0x0C, 0x03, 0x6F, 0x30 + UInt8(number / 10), 0x30 + UInt8(number % 10)]
                + [0xA1, 0x03, 0x01, 0x01, 0xFF]
        }.flatMap { $0 }
        let long: [UInt8] = [0x30, 0x82, 0x01, UInt8(many.count + 4 - 256 + 4)]
            + [0x0C, 0x02, 0x31, 0x31, 0x30, 0x82, 0x01, UInt8(many.count - 256)] + many
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) { try AppAttestKeyAccessControl(policy: long) }
    }

    @Test("a policy over the size bound is refused before it is parsed")
    func sizeBound() throws {
        let huge = [UInt8](repeating: 0x30, count: AppAttestKeyAccessControl.maximumPolicyLength + 1)
        #expect(throws: AttestKitError.code(.keyAccessControlMalformed)) { try AppAttestKeyAccessControl(policy: huge) }
    }
}
