// swift-tools-version: 6.2
import Foundation
import PackageDescription

/// `ATTESTKIT_STRICT=1` (set by scripts/test, so by CI) turns every warning of our own targets into an error
/// and requires explicit Sendable on public types; dependencies are unaffected.
let ciFlags: [SwiftSetting] =
    ProcessInfo.processInfo.environment["ATTESTKIT_STRICT"] == "1"
    ? [.unsafeFlags(["-warnings-as-errors", "-require-explicit-sendable"])] : []

let strictSettings: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ] + ciFlags

let package = Package(
    name: "AttestKit",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "AttestKit", targets: ["AttestKit"]),
        .library(name: "AttestKitWire", targets: ["AttestKitWire"]),
        .library(name: "AttestKitTesting", targets: ["AttestKitTesting"]),
        .executable(name: "attestkit", targets: ["attestkit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "AttestKit",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings + [.strictMemorySafety()]
        ),
        .target(
            name: "AttestKitTesting",
            dependencies: [
                "AttestKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AttestKitWire",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitWireTests",
            dependencies: ["AttestKitWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AttestKitConformance",
            dependencies: ["AttestKit"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "attestkit",
            dependencies: [
                "AttestKit",
                "AttestKitConformance",
                "AttestKitTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitTests",
            dependencies: [
                "AttestKit",
                "AttestKitConformance",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitTestingTests",
            dependencies: [
                "AttestKitTesting",
                "AttestKit",
                "AttestKitConformance",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
