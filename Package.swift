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

/// Package traits decide what a consumer fetches: SwiftPM resolves only the dependencies that the enabled traits
/// use, whatever products the consumer links (it does not prune by product). The core (`AttestKit`, `AttestKitWire`,
/// `AttestKitClient`, the software Apple) needs none and depends on swift-crypto, swift-certificates and swift-asn1
/// alone. A server names its trait (`traits: ["Hummingbird"]`, `["Vapor"]`, `["Flows"]`). See docs/architecture.md,
/// "Dependencies and traits".
///
/// The default traits depend on who reads this manifest. Read as another package's dependency (an app that adds
/// the package in Xcode, which before Xcode 26.4 cannot choose a dependency's traits), no trait is on, so the app
/// fetches those 3 repositories and not the server stack. Read as the root (a clone: `swift run attestkit serve`,
/// `swift build`, CI), `Hummingbird` and `Vapor` are on, so the README's first command builds the service. SwiftPM
/// reads a dependency's manifest from its repository (the package directory is then `/`) and from its checkout
/// (a directory under `checkouts`); neither is ever a clone's directory. A layout this does not recognise gives the
/// root's defaults: the dependency resolves everything, as it did before, and still builds. scripts/dependency-count
/// resolves a consumer that names no trait through a git URL, as Xcode does, and fails if it fetches more than 3.
let readAsDependency: Bool = {
    let directory = Context.packageDirectory
    let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().lastPathComponent
    return directory == "/" || parent == "checkouts"
}()

let traits: Set<Trait> = [
    .trait(
        name: "AppleServices", description: "AttestKitApple: DeviceCheck and receipt exchange (AsyncHTTPClient, JWTKit)."),
    .trait(name: "Storage", description: "AttestKitStore: challenges and keys on SQLite and PostgreSQL."),
    .trait(
        name: "Flows", description: "AttestKitFlows: a backend's decisions without a framework.",
        enabledTraits: ["AppleServices", "Storage"]),
    .trait(
        name: "Hummingbird",
        description: "AttestKitServer, AttestKitAppleMock and the attestkit command line (Hummingbird 2).",
        enabledTraits: ["Flows"]),
    .trait(name: "Vapor", description: "AttestKitVapor: the Vapor 4 integration.", enabledTraits: ["Flows"]),
    .default(enabledTraits: readAsDependency ? [] : ["Hummingbird", "Vapor"]),
]

/// The trait under which a target uses a dependency that is not part of the core.
let whenAppleServices = TargetDependencyCondition.when(traits: ["AppleServices"])
let whenStorage = TargetDependencyCondition.when(traits: ["Storage"])
let whenFlows = TargetDependencyCondition.when(traits: ["Flows"])
let whenHummingbird = TargetDependencyCondition.when(traits: ["Hummingbird"])
let whenVapor = TargetDependencyCondition.when(traits: ["Vapor"])

/// `ATTESTKIT_DOCS=1` (set by scripts/docs) or `SPI_GENERATE_DOCS=1` (the Swift Package Index's documentation
/// build) adds swift-docc-plugin to build the DocC catalogs; nobody else, adopters
/// included, fetches it.
let documentationDependencies: [Package.Dependency] =
    ["ATTESTKIT_DOCS", "SPI_GENERATE_DOCS"].contains { ProcessInfo.processInfo.environment[$0] == "1" }
    ? [.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0")] : []

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
    ],
    traits: traits,
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
        .package(
            url: "https://github.com/apple/swift-configuration.git", from: "1.4.0",
            traits: [.defaults, .trait(name: "YAML", condition: .when(traits: ["Hummingbird"]))]),
        // Both come with swift-configuration: FilePath names a directory of secrets, Yams checks a YAML file's keys.
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ] + documentationDependencies,
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
                "AttestKitWire",
                .product(name: "JWTKit", package: "jwt-kit", condition: whenAppleServices),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: whenAppleServices),
                .product(name: "Logging", package: "swift-log", condition: whenAppleServices),
                .product(name: "NIOCore", package: "swift-nio", condition: whenAppleServices),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: whenAppleServices),
            ],
            swiftSettings: strictSettings
        ),
        // How the listeners of the server and of the mock stop when their task is cancelled (not a product).
        .target(
            name: "AttestKitShutdown",
            dependencies: [
                .product(name: "Logging", package: "swift-log", condition: whenHummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenHummingbird),
            ],
            swiftSettings: strictSettings
        ),
        // A mock of Apple's services, in-process for tests and behind `attestkit mock-apple`.
        .target(
            name: "AttestKitAppleMock",
            dependencies: [
                "AttestKit",
                "AttestKitApple",
                .target(name: "AttestKitShutdown", condition: whenHummingbird),
                "AttestKitTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: whenHummingbird),
                .product(name: "Hummingbird", package: "hummingbird", condition: whenHummingbird),
                .product(name: "JWTKit", package: "jwt-kit", condition: whenHummingbird),
                .product(name: "Logging", package: "swift-log", condition: whenHummingbird),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOCore", package: "swift-nio", condition: whenHummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenHummingbird),
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
                .product(name: "NIOCore", package: "swift-nio", condition: whenStorage),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: whenStorage),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: whenStorage),
                .product(name: "Logging", package: "swift-log", condition: whenStorage),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenStorage),
                .product(name: "SQLiteNIO", package: "sqlite-nio", condition: whenStorage),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: whenStorage),
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
                .product(name: "Logging", package: "swift-log", condition: whenFlows),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: whenFlows),
                .product(name: "Metrics", package: "swift-metrics", condition: whenFlows),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenFlows),
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
                .target(name: "AttestKitShutdown", condition: whenHummingbird),
                "AttestKitApple",
                "AttestKitStore",
                "AttestKitWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: whenHummingbird),
                .product(name: "Configuration", package: "swift-configuration", condition: whenHummingbird),
                .product(name: "SystemPackage", package: "swift-system", condition: whenHummingbird),
                .product(name: "Yams", package: "Yams", condition: whenHummingbird),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: whenHummingbird),
                .product(name: "Hummingbird", package: "hummingbird", condition: whenHummingbird),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: whenHummingbird),
                .product(name: "Logging", package: "swift-log", condition: whenHummingbird),
                .product(name: "Metrics", package: "swift-metrics", condition: whenHummingbird),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOCore", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: whenHummingbird),
                .product(name: "Prometheus", package: "swift-prometheus", condition: whenHummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenHummingbird),
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
                "AttestKitShutdown",
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
                .product(name: "Logging", package: "swift-log", condition: whenVapor),
                .product(name: "NIOCore", package: "swift-nio", condition: whenVapor),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: whenVapor),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenVapor),
                .product(name: "Vapor", package: "vapor", condition: whenVapor),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AttestKitVaporTests",
            dependencies: [
                "AttestKitTestSupport",
                "AttestKit",
                "AttestKitApple",
                "AttestKitAppleMock",
                "AttestKitFlows",
                "AttestKitStore",
                "AttestKitTesting",
                "AttestKitVapor",
                "AttestKitWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
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
                "AttestKitApple",
                "AttestKitAppleMock",
                "AttestKitClient",
                "AttestKitFlows",
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
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: whenHummingbird),
                .product(name: "Logging", package: "swift-log", condition: whenHummingbird),
                .product(name: "NIOCore", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: whenHummingbird),
                .product(name: "NIOPosix", package: "swift-nio", condition: whenHummingbird),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenHummingbird),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: whenHummingbird),
                "AttestKitStore",
                "AttestKitFlows",
                "AttestKitServer",
                "AttestKitWire",
                .product(name: "Configuration", package: "swift-configuration", condition: whenHummingbird),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: whenHummingbird),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        // What several test targets share: the PostgreSQL server of the tests, `attestkit serve` as a child process,
        // a raw connection to a server on loopback. Not a product.
        .target(
            name: "AttestKitTestSupport",
            dependencies: [
                "AttestKit",
                "AttestKitStore",
                "AttestKitTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: whenStorage),
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
            resources: [.copy("Vectors"), .copy("SimulatedVectors")],
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
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
