// swift-tools-version: 6.2
import PackageDescription

// Two small apps that guard a route with AttestKit, one on Vapor and one on Hummingbird, in one package so that
// they share one build of their dependencies (scripts/examples builds them and runs their tests).
let package = Package(
    name: "AttestKitExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AttestKit", path: "../"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
    ],
    targets: [
        .executableTarget(
            name: "VaporExample",
            dependencies: [
                .product(name: "AttestKit", package: "AttestKit"),
                .product(name: "AttestKitStore", package: "AttestKit"),
                .product(name: "AttestKitVapor", package: "AttestKit"),
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        .testTarget(
            name: "VaporExampleTests",
            dependencies: [
                "VaporExample",
                .product(name: "AttestKitTesting", package: "AttestKit"),
                .product(name: "AttestKitWire", package: "AttestKit"),
                .product(name: "VaporTesting", package: "vapor"),
            ]
        ),
        .executableTarget(
            name: "HummingbirdExample",
            dependencies: [
                .product(name: "AttestKit", package: "AttestKit"),
                .product(name: "AttestKitServer", package: "AttestKit"),
                .product(name: "AttestKitStore", package: "AttestKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "HummingbirdExampleTests",
            dependencies: [
                "HummingbirdExample",
                .product(name: "AttestKitTesting", package: "AttestKit"),
                .product(name: "AttestKitWire", package: "AttestKit"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ]
)
