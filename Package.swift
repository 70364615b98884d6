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
    // SwiftPM's platforms are package-wide. iOS, tvOS and watchOS are the app side's (App Attest needs iOS 14,
    // tvOS 15, watchOS 9): only the client products (AttestKitClient, AttestKitWire, AttestKitClientSimulator)
    // are meant for them, and scripts/apple-api-check keeps their sources free of anything newer. macOS stays at
    // 15 for the server targets and their dependencies (jwt-kit and swift-prometheus declare macOS 13, the server
    // uses Mutex): the client's own code is written and checked for macOS 11, but a Mac app below macOS 15 cannot
    // take this package until the client moves to a package of its own (docs/app-side.md, "Platforms").
    platforms: [.macOS(.v15), .iOS(.v14), .tvOS(.v15), .watchOS(.v9)],
    products: [
        .library(name: "AttestKit", targets: ["AttestKit"]),
        .library(name: "AttestKitWire", targets: ["AttestKitWire"]),
        .library(name: "AttestKitTesting", targets: ["AttestKitTesting"]),
        .library(name: "AttestKitApple", targets: ["AttestKitApple"]),
        .library(name: "AttestKitAppleMock", targets: ["AttestKitAppleMock"]),
        .library(name: "AttestKitStore", targets: ["AttestKitStore"]),
        .library(name: "AttestKitFlows", targets: ["AttestKitFlows"]),
        .library(name: "AttestKitServer", targets: ["AttestKitServer"]),
        .library(name: "AttestKitVapor", targets: ["AttestKitVapor"]),
        .library(name: "AttestKitClient", targets: ["AttestKitClient"]),
        .library(name: "AttestKitClientSimulator", targets: ["AttestKitClientSimulator"]),
        .executable(name: "attestkit", targets: ["attestkit"]),
        .executable(name: "attestkit-store-worker", targets: ["AttestKitStoreWorker"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
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
        // Apple's web services (DeviceCheck bits, receipt exchange). No server framework: apps that only call
        // Apple must not pull one in.
        .target(
            name: "AttestKitApple",
            dependencies: [
                "AttestKit",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // A mock of Apple's services, in-process for tests and behind `attestkit mock-apple`.
        .target(
            name: "AttestKitAppleMock",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AttestKitStore",
            dependencies: [
                "AttestKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The decisions, once, without a framework: challenges, registration, the assertion gate, deployment
        // policies, the background services, one typed error. No web framework, no Prometheus, no configuration
        // library: every edge (Hummingbird here, an adopter's own) adapts to it.
        .target(
            name: "AttestKitFlows",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitStore",
                "AttestKitWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitFlowsTests",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitFlows",
                "AttestKitStore",
                "AttestKitTesting",
                "AttestKitWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        // The HTTP service (`attestkit serve`) and the Hummingbird middleware: the edge over AttestKitFlows.
        .target(
            name: "AttestKitServer",
            dependencies: [
                "AttestKit",
                "AttestKitFlows",
                "AttestKitApple",
                "AttestKitStore",
                "AttestKitWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitServerTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitApple",
                "AttestKitAppleMock",
                "AttestKitFlows",
                "AttestKitServer",
                "AttestKitStore",
                "AttestKitTesting",
                "AttestKitWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        // The Vapor integration: storage keys, a middleware, routes and a lifecycle over AttestKitFlows. No
        // Hummingbird: it does not depend on AttestKitServer.
        .target(
            name: "AttestKitVapor",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitFlows",
                "AttestKitStore",
                "AttestKitWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Vapor", package: "vapor"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitVaporTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitFlows",
                "AttestKitStore",
                "AttestKitTesting",
                "AttestKitVapor",
                "AttestKitWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"),
            ],
            swiftSettings: strictSettings
        ),
        // One behavioural suite run against both integrations (Hummingbird and Vapor) on both SQL stores.
        .testTarget(
            name: "AttestKitEdgeTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitClient",
                "AttestKitServer",
                "AttestKitStore",
                "AttestKitTesting",
                "AttestKitVapor",
                "AttestKitWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"),
            ],
            swiftSettings: strictSettings
        ),
        // The app side: only the wire contract is shared with the server, so an app pulls no server code.
        .target(
            name: "AttestKitClient",
            dependencies: ["AttestKitWire", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        // The simulated device for the app side: Linux, tests and debug builds. A separate product, so that a
        // release app never links the software Apple.
        .target(
            name: "AttestKitClientSimulator",
            dependencies: ["AttestKitClient", "AttestKitTesting", "AttestKit"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitClientTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitAppleMock",
                "AttestKitClient",
                "AttestKitClientSimulator",
                "AttestKitTesting",
                "AttestKitWire",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "AttestKitStoreWorker",
            dependencies: ["AttestKit", "AttestKitStore"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "attestkit",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitAppleMock",
                "AttestKitConformance",
                "AttestKitTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                "AttestKitStore",
                "AttestKitFlows",
                "AttestKitServer",
                "AttestKitWire",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        // What several test targets share: the PostgreSQL server of the tests, and `attestkit serve` as a child
        // process. Not a product.
        .target(
            name: "AttestKitTestSupport",
            dependencies: [
                "AttestKit",
                "AttestKitStore",
                "AttestKitTesting",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/AttestKitTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitTests",
            dependencies: [
                "AttestKit",
                "AttestKitConformance",
                "AttestKitTesting",
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
                "AttestKitTestSupport",
                "AttestKitTesting",
                "AttestKit",
                "AttestKitConformance",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitAppleTests",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                "AttestKitAppleMock",
                "AttestKitTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitStoreTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitStore",
                "AttestKitTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
