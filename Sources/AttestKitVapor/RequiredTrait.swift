// AttestKitVapor is built only with the package trait Vapor (Package.swift): without it, the dependencies it imports
// are not part of the graph, and this message says so before the compiler's "no such module".
#if !Vapor
    #error(
        "AttestKitVapor needs the package trait Vapor: traits: [\"Vapor\"] in the dependency, or --traits Vapor"
    )
#endif
