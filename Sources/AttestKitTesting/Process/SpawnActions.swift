#if canImport(Glibc) || os(macOS)
    #if canImport(Glibc)
        import Glibc
    #else
        import Darwin
    #endif
    import Foundation

    /// `posix_spawn_file_actions_t` for ``ChildProcess``, with glibc's and Darwin's differences in one place. The
    /// functions return `posix_spawn`'s error numbers (0 on success).
    struct SpawnActions: ~Copyable {
        #if canImport(Glibc)
            private var actions = posix_spawn_file_actions_t()
        #else
            private var actions: posix_spawn_file_actions_t? = nil
        #endif
        /// The result of `posix_spawn_file_actions_init`; nothing else may be used unless it is 0.
        let initialized: Int32

        init() {
            initialized = posix_spawn_file_actions_init(&actions)
        }

        deinit {
            // A copy of the value destroys what it refers to (glibc's array of actions, Darwin's object).
            var actions = actions
            if initialized == 0 { posix_spawn_file_actions_destroy(&actions) }
        }

        /// Keeps the parent's `descriptor` (0, 1 or 2) as it is.
        mutating func inherit(_ descriptor: Int32) -> Int32 {
            #if canImport(Glibc)
                0  // Only descriptors from 3 up are closed.
            #else
                posix_spawn_file_actions_addinherit_np(&actions, descriptor)  // Else CLOEXEC_DEFAULT closes it.
            #endif
        }

        /// Opens `path` with `flags` (mode 0644 when it creates the file) as `descriptor` in the child.
        mutating func open(_ descriptor: Int32, _ path: String, _ flags: Int32) -> Int32 {
            posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, mode_t(0o644))
        }

        /// Makes `descriptor` a copy of the parent's `source` in the child.
        mutating func duplicate(_ source: Int32, to descriptor: Int32) -> Int32 {
            posix_spawn_file_actions_adddup2(&actions, source, descriptor)
        }

        /// Closes every descriptor from 3 up in the child, after the actions added before.
        mutating func closeFromThree() -> Int32 {
            #if canImport(Glibc)
                if let addCloseFrom = SpawnActions.addCloseFrom {
                    return addCloseFrom(&actions, 3)
                }
                // glibc before 2.34: each descriptor open now. A descriptor closed by the spawn (the listing's own)
                // is no error: glibc reports only descriptors out of range.
                let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
                for descriptor in names.compactMap({ Int32($0) }) where descriptor >= 3 {
                    let result = posix_spawn_file_actions_addclose(&actions, descriptor)
                    guard result == 0 else { return result }
                }
                return 0
            #else
                return 0  // POSIX_SPAWN_CLOEXEC_DEFAULT (SpawnAttributes).
            #endif
        }

        /// `posix_spawn` (`posix_spawnp` for a name without `/`) with these actions.
        mutating func spawn(
            _ pid: inout pid_t, _ executable: String, attributes: inout SpawnAttributes,
            argv: [UnsafeMutablePointer<CChar>?], envp: [UnsafeMutablePointer<CChar>?]
        ) -> Int32 {
            attributes.withPointer { attributes in
                executable.contains("/")
                    ? posix_spawn(&pid, executable, &actions, attributes, argv, envp)
                    : posix_spawnp(&pid, executable, &actions, attributes, argv, envp)
            }
        }

        #if canImport(Glibc)
            private typealias AddCloseFrom =
                @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32)
                -> Int32
            /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does
            /// not declare; `nil` on an older glibc.
            private static let addCloseFrom: AddCloseFrom? = {
                guard let handle = dlopen(nil, RTLD_NOW),
                    let symbol = dlsym(handle, "posix_spawn_file_actions_addclosefrom_np")
                else { return nil }
                return unsafeBitCast(symbol, to: AddCloseFrom.self)
            }()
        #endif
    }

    /// `posix_spawnattr_t` for ``ChildProcess``: a process group of its own, every signal at its default and none
    /// blocked, and (Darwin) every descriptor close-on-exec unless an action keeps it.
    struct SpawnAttributes: ~Copyable {
        #if canImport(Glibc)
            private var attributes = posix_spawnattr_t()
        #else
            private var attributes: posix_spawnattr_t? = nil
        #endif
        /// 0, or the error number of the first call that failed (then the attributes must not be used).
        let initialized: Int32

        init() {
            let created = posix_spawnattr_init(&attributes)
            guard created == 0 else {
                initialized = created
                return
            }
            var flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
            #if !canImport(Glibc)
                flags |= POSIX_SPAWN_CLOEXEC_DEFAULT
            #endif
            var defaults = sigset_t()
            sigfillset(&defaults)
            sigdelset(&defaults, SIGKILL)
            sigdelset(&defaults, SIGSTOP)
            var mask = sigset_t()
            sigemptyset(&mask)
            let results = [
                posix_spawnattr_setflags(&attributes, Int16(flags)),
                posix_spawnattr_setpgroup(&attributes, 0),
                posix_spawnattr_setsigdefault(&attributes, &defaults),
                posix_spawnattr_setsigmask(&attributes, &mask),
            ]
            initialized = results.first { $0 != 0 } ?? 0
            if initialized != 0 { posix_spawnattr_destroy(&attributes) }
        }

        deinit {
            var attributes = attributes
            if initialized == 0 { posix_spawnattr_destroy(&attributes) }
        }

        #if canImport(Glibc)
            fileprivate mutating func withPointer<Result>(
                _ body: (UnsafeMutablePointer<posix_spawnattr_t>) -> Result
            ) -> Result {
                body(&attributes)
            }
        #else
            fileprivate mutating func withPointer<Result>(
                _ body: (UnsafeMutablePointer<posix_spawnattr_t?>) -> Result
            ) -> Result {
                body(&attributes)
            }
        #endif
    }
#endif
