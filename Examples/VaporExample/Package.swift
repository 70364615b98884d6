// swift-tools-version: 6.2
import PackageDescription

// A Vapor app that guards a route with AttestKit. It depends on AttestKit with the `Vapor` trait alone, so it
// resolves Vapor and AttestKit's Vapor edge and never Hummingbird (scripts/examples checks that). This copy depends on
// the repository next to it by path; an app of your own names the package by URL, with the same traits:
//     .package(url: "https://github.com/attestkit/attestkit.git", from: "0.1.0", traits: ["Vapor"])
let package = Package(
    name: "VaporExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AttestKit", path: "../../", traits: ["Vapor"]),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.0"),
    ],
    targets: [
        .executableTarget(
            name: "VaporExample",
            dependencies: [
                .product(name: "AttestKit", package: "AttestKit"),
                .product(name: "AttestKitFlows", package: "AttestKit"),
                .product(name: "AttestKitStore", package: "AttestKit"),
                .product(name: "AttestKitVapor", package: "AttestKit"),
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        .testTarget(
            name: "VaporExampleTests",
            dependencies: [
                "VaporExample",
                .product(name: "AttestKitFlows", package: "AttestKit"),
                .product(name: "AttestKitTesting", package: "AttestKit"),
                .product(name: "AttestKitWire", package: "AttestKit"),
                .product(name: "VaporTesting", package: "vapor"),
            ]
        ),
    ]
)
