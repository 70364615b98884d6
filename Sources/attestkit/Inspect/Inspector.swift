import AttestKit
import Crypto
import Foundation
import SwiftASN1
import X509

/// Builds an ``InspectionNode`` tree for an App Attest object, verifying nothing.
enum Inspector {
    struct Unrecognised: Error, CustomStringConvertible {
        var description: String
    }

    static func inspect(_ bytes: [UInt8]) throws -> InspectionNode {
        guard let first = bytes.first else { throw Unrecognised(description: "the input is empty") }
        switch first {
        case 0xA0...0xBF:
            if let attestation = try? AttestationObject(bytes: bytes) {
                return self.attestation(attestation, size: bytes.count)
            }
            do {
                return assertion(try AssertionObject(bytes: bytes), size: bytes.count)
            } catch {
                throw Unrecognised(description: "a CBOR map that is neither an attestation nor an assertion: \(error)")
            }
        case 0x30:
            do {
                return try receipt(bytes)
            } catch {
                throw Unrecognised(description: "a SEQUENCE that is not an App Attest receipt: \(error)")
            }
        default:
            throw Unrecognised(description: "not an attestation, assertion or receipt")
        }
    }

    static func attestation(_ object: AttestationObject, size: Int) -> InspectionNode {
        var children = [InspectionNode("fmt", object.format), authenticatorData(object.authenticatorData)]
        for (index, der) in object.certificates.enumerated() {
            let role = index == 0 ? "credential certificate" : "intermediate certificate"
            if let certificate = try? Certificate(derEncoded: der) {
                children.append(Self.certificate(certificate, label: "x5c[\(index)] \(role)", size: der.count))
            } else {
                children.append(InspectionNode("x5c[\(index)] \(role)", "\(der.count) bytes, does not parse"))
            }
        }
        if let receipt = object.receipt {
            children.append(
                (try? Self.receipt(receipt)) ?? InspectionNode("receipt", "\(receipt.count) bytes, does not parse"))
        } else {
            children.append(InspectionNode("receipt", "absent"))
        }
        return InspectionNode("attestation", "\(size) bytes", children)
    }

    static func assertion(_ object: AssertionObject, size: Int) -> InspectionNode {
        InspectionNode(
            "assertion", "\(size) bytes",
            [
                InspectionNode("signature", "\(object.signature.count) bytes DER: \(Hex.encode(object.signature))"),
                authenticatorData(object.authenticatorData),
            ])
    }

    static func authenticatorData(_ data: AuthenticatorData) -> InspectionNode {
        var flags: [String] = []
        if data.flags.contains(.userPresent) { flags.append("UP") }
        if data.flags.contains(.userVerified) { flags.append("UV") }
        if data.flags.contains(.attestedCredentialData) { flags.append("AT") }
        if data.flags.contains(.extensionData) { flags.append("ED") }
        var children = [
            InspectionNode("rpIdHash", Hex.encode(data.rpIDHash)),
            InspectionNode(
                "flags", String(format: "0x%02x", data.flags.rawValue) + " (\(flags.joined(separator: " ")))"),
            InspectionNode("signCount", String(data.signCount)),
        ]
        if let credential = data.attestedCredential {
            children.append(
                InspectionNode(
                    "aaguid", "\(printable(credential.aaguid)) (\(credential.environment?.rawValue ?? "unknown"))"))
            children.append(InspectionNode("credentialId", Base64.encode(credential.credentialID)))
            children.append(
                InspectionNode(
                    "credentialPublicKey", "COSE EC2 P-256",
                    [
                        InspectionNode("x", Hex.encode(credential.publicKey.x)),
                        InspectionNode("y", Hex.encode(credential.publicKey.y)),
                    ]))
        }
        if let extensions = data.extensions {
            var entries: [InspectionNode] = []
            if let version = extensions.bundleVersion {
                entries.append(InspectionNode("apple_bundle_version_01", version))
            }
            if let category = extensions.validationCategory {
                entries.append(InspectionNode("apple_validation_category_01", String(category)))
            }
            for key in extensions.otherKeys { entries.append(InspectionNode(key, "(not interpreted)")) }
            children.append(InspectionNode("extensions", "iOS 27+ map", entries))
        }
        return InspectionNode("authenticatorData", "\(data.bytes.count) bytes", children)
    }

    static func certificate(_ certificate: Certificate, label: String, size: Int) -> InspectionNode {
        var children = [
            InspectionNode("subject", certificate.subject.description),
            InspectionNode("issuer", certificate.issuer.description),
            InspectionNode("serial", Hex.encode(certificate.serialNumber.bytes)),
            InspectionNode("notBefore", iso(certificate.notValidBefore)),
            InspectionNode("notAfter", iso(certificate.notValidAfter)),
            InspectionNode(
                "signatureAlgorithm",
                certificate.signatureAlgorithm.description.replacingOccurrences(of: "SignatureAlgorithm.", with: "")),
        ]
        if let key = P256.Signing.PublicKey(certificate.publicKey) {
            children.append(InspectionNode("publicKey", "P-256 \(Hex.encode(key.x963Representation))"))
            children.append(InspectionNode("keyId (SHA-256 of the key)", KeyID(publicKey: key).base64))
        } else if P384.Signing.PublicKey(certificate.publicKey) != nil {
            children.append(InspectionNode("publicKey", "P-384"))
        }
        var extensions: [InspectionNode] = []
        for ext in certificate.extensions {
            let known = Self.extensionNames[ext.oid.description].map { " \($0)" } ?? ""
            let name = ext.oid.description + known + (ext.critical ? " (critical)" : "")
            switch ext.oid {
            case AppAttestNonceExtension.oid:
                let nonce = (try? AppAttestNonceExtension(ext)).map { "nonce " + Hex.encode($0.nonce) }
                extensions.append(InspectionNode(name, nonce ?? "nonce (malformed)"))
            case AppAttestDeviceExtension.oid:
                let device = try? AppAttestDeviceExtension(ext)
                let fields = (device?.textFields ?? [:]).sorted { $0.key < $1.key }.map {
                    InspectionNode(
                        "[\($0.key)]",
                        $0.value + ($0.key == AppAttestDeviceExtension.osVersionTag ? " (OS version)" : ""))
                }
                extensions.append(InspectionNode(name, "device information", fields))
            default:
                extensions.append(InspectionNode(name, "\(ext.value.count) bytes"))
            }
        }
        children.append(InspectionNode("extensions", nil, extensions))
        return InspectionNode(label, "\(size) bytes", children)
    }

    static func receipt(_ bytes: [UInt8]) throws -> InspectionNode {
        let (container, receipt) = try Receipt.parseUnverified(bytes)
        var children = [
            InspectionNode(
                "encoding", container.encoding == .definiteLength ? "DER/definite lengths" : "BER/indefinite lengths"),
            InspectionNode("signedAttributes", container.signedAttributes == nil ? "absent" : "present (2020-style)"),
            InspectionNode("signer", container.signer.subject.description),
        ]
        for (index, certificate) in container.certificates.enumerated() {
            children.append(
                InspectionNode(
                    "certificates[\(index)]", "\(certificate.subject) until \(iso(certificate.notValidAfter))"))
        }
        var fields = [
            InspectionNode("2 appId", receipt.appID),
            InspectionNode("3 attestedCertificate", "\(receipt.attestedCertificateDER.count) bytes"),
            InspectionNode("4 clientHash", Hex.encode(receipt.clientHash)),
            InspectionNode("5 token", "\(receipt.token.utf8.count) characters (not shown)"),
            InspectionNode("6 type", receipt.type.rawValue),
        ]
        if let environment = receipt.environment { fields.append(InspectionNode("7 environment", environment)) }
        fields.append(InspectionNode("12 creationTime", iso(receipt.creationTime)))
        if let risk = receipt.riskMetric { fields.append(InspectionNode("17 riskMetric", String(risk))) }
        if let notBefore = receipt.notBefore { fields.append(InspectionNode("19 notBefore", iso(notBefore))) }
        if let expiration = receipt.expirationTime {
            fields.append(InspectionNode("21 expirationTime", iso(expiration)))
        }
        if let key = try? Certificate(derEncoded: receipt.attestedCertificateDER),
            let publicKey = P256.Signing.PublicKey(key.publicKey)
        {
            fields.append(InspectionNode("attested keyId", KeyID(publicKey: publicKey).base64))
        }
        children.append(InspectionNode("payload", nil, fields))
        return InspectionNode("receipt", "\(bytes.count) bytes", children)
    }

    static let extensionNames = [
        "2.5.29.19": "basicConstraints", "2.5.29.15": "keyUsage", "2.5.29.37": "extendedKeyUsage",
        "2.5.29.14": "subjectKeyIdentifier", "2.5.29.35": "authorityKeyIdentifier",
        "2.5.29.32": "certificatePolicies", "1.3.6.1.5.5.7.1.1": "authorityInfoAccess",
        "1.2.840.113635.100.8.2": "App Attest nonce", "1.2.840.113635.100.8.5": "Apple (undocumented)",
        "1.2.840.113635.100.8.6": "Apple key access control (undocumented)",
        "1.2.840.113635.100.8.7": "Apple device information",
    ]

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func printable(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
    }
}
