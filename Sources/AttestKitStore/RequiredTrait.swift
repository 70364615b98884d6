// AttestKitStore is built only with the package trait Storage (Package.swift): without it, the dependencies it imports
// are not part of the graph, and this message says so before the compiler's "no such module".
#if !Storage
    #error(
        "AttestKitStore needs the package trait Storage: traits: [\"Storage\"] in the dependency, or --traits Storage"
    )
#endif
