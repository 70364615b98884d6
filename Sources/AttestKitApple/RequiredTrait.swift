// AttestKitApple is built only with the package trait AppleServices (Package.swift): without it, the dependencies it
// imports are not part of the graph, and this message says so before the compiler's "no such module".
#if !AppleServices
    #error(
        "AttestKitApple needs the package trait AppleServices: traits: [\"AppleServices\"] in the dependency, or --traits AppleServices"
    )
#endif
