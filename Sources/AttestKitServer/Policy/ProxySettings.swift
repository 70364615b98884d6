// The trusted proxies and the header they write are configured on `ServerConfiguration`; their types moved to the
// flows (shared with the Vapor edge) and stay visible to an adopter who imports only AttestKitServer.
@_exported public import struct AttestKitFlows.IPNetwork
@_exported public import enum AttestKitFlows.ClientAddressHeader
