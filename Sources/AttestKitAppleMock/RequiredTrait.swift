// AttestKitAppleMock is built only with the package trait Hummingbird (Package.swift): without it, the dependencies it
// imports are not part of the graph, and this message says so before the compiler's "no such module".
#if !Hummingbird
    #error(
        "AttestKitAppleMock needs the package trait Hummingbird: traits: [\"Hummingbird\"] in the dependency, or --traits Hummingbird"
    )
#endif
