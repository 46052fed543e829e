/// The fleet's mirror: the store followed (`StoreFollower.follow`) and what it brings served
/// here as it comes, into the targets it is made with (what is served, the overrides, the API's
/// tokens, the keys). A part of its own, made once those exist: the follower is made first, as
/// the start reads the store's snapshot through it before anything is served.
package struct StoreMirror: Sendable {
    let follower: StoreFollower
    let following: Task<Void, Never>

    /// Follows the store from now on: the API's tokens as the store holds them given at once
    /// (before the API answers), then each change as the watch brings it.
    package init(_ follower: StoreFollower, into targets: StoreFollower.Targets) async {
        self.follower = follower
        await follower.useTokens(follower.storeTokens, targets.tokens)
        following = Task { await follower.follow(into: targets) }
    }

    /// Stops following, then closes the connection to etcd.
    package func stop() async {
        following.cancel()
        await following.value
        await follower.stop()
    }
}
