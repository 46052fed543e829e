import DNSWire
import Foundation
import Logging
import NearcastAnswers
import NearcastBasics
import NearcastDNSSEC
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastZones

/// The signatures' refresh (`SignatureRefresh`) as what is served sees it: what it reads of the
/// signed zones, and its changes of them, each on a turn as any change is.
extension ServedConfig {
    /// What a refresh round reads of what is served.
    package struct SigningView: Sendable {
        /// `signature-validity` and `propagation-delay` (seconds), and where the keys are kept.
        package var validity: Int
        package var propagationDelay: Int
        package var stateDirectory: String?
        /// Each zone signed here: its signed copy served, and the keys it was signed with.
        package var zones: [(origin: DNSName, signed: Zone, keys: [DNSSECKey])]
    }

    package func signingView() -> SigningView {
        SigningView(
            validity: running.signatureValidity, propagationDelay: running.propagationDelay,
            stateDirectory: running.stateDirectory,
            zones: signing.signedCopies.map { ($0.key, $0.value, signing.copies[$0.key]?.keys ?? []) })
    }

    /// The tags of the keys zone `origin`'s signed copy still has signatures of (a refresh's
    /// walk found them): such a key stays published, whatever its timing says.
    package func keysInUse(_ origin: DNSName, _ tags: Set<UInt16>) async {
        await withTurn { s in s.signing.inUse[origin] = tags }
    }

    /// The fast path made to hold the signatures of the geo answers' variants kept now (none
    /// without `geo`), so XDP answers DO queries about geo names with them.
    package func writeGeoVariants(_ geo: GeoTable?) {
        guard let fastPath = writer?.fastPath else { return }
        let variants =
            geo.map {
                FastPath.geoSignatures(signing.onlineSignatures, geo: $0, now: UInt32(Date().timeIntervalSince1970))
            } ?? []
        do { try fastPath.writeGeoSignatures(variants) } catch {
            logger.error("signed geo answers not written to the fast path", metadata: ["why": "\(error)"])
        }
    }

    /// The variants the geo names answer with now signed ahead where they are not, or their
    /// signatures near their end, and the fast path given them: after a health change (whose new
    /// node sets the slow path signs as they are asked for meanwhile) and each refresh round.
    package func refreshGeoVariants() async {
        guard let geo = live.current?.table, !signing.copies.isEmpty else { return }
        let online = signing.onlineSignatures
        let made = try? await onOwnThread(name: "nc-signing", background: true) {
            online.sign(geo.answerVariants(), now: UInt32(Date().timeIntervalSince1970))
        }
        if let made, made.signed > 0 {
            logger.info(
                "geo answers signed", metadata: ["variants": "\(made.variants)", "signed-now": "\(made.signed)"])
        }
        // Those the slow path signed as they were asked too (the map is written where it changed).
        writeGeoVariants(geo)
    }
}
