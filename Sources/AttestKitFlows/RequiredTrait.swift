// AttestKitFlows is built only with the package trait Flows (Package.swift): without it, the dependencies it imports
// are not part of the graph, and this message says so before the compiler's "no such module".
#if !Flows
    #error(
        "AttestKitFlows needs the package trait Flows: traits: [\"Flows\"] in the dependency, or --traits Flows"
    )
#endif
