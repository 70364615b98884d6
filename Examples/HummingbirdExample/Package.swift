// swift-tools-version: 6.2
import PackageDescription

// A Hummingbird app that guards a route with AttestKit. It depends on AttestKit with the `Hummingbird` trait alone,
// so it resolves Hummingbird and AttestKit's service (AttestKitServer) and never Vapor (scripts/examples checks
// that). This copy depends on the repository next to it by path; an app of your own names the package by URL, with
// the same traits:
//     .package(url: "https://github.com/attestkit/attestkit.git", from: "0.1.0", traits: ["Hummingbird"])
let package = Package(
    name: "HummingbirdExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AttestKit", path: "../../", traits: ["Hummingbird"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
    ],
    targets: [
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
