/// The demo's config, built into the tool so that `mediafetch demo` runs from any folder. `config/demo.yaml` is
/// the readable copy; a test keeps the two equal.
enum DemoConfig {
    static let path = "(built-in) demo.yaml"

    static let text = """
        # The offline demo. `mediafetch demo` runs a copy of this file built into the tool (a test keeps the two
        # equal), from any folder: it starts the bundled mock catalog on loopback, points source.endpoint at it,
        # and stores the previews in demo-output/ under the folder it runs in. Run as `mediafetch run
        # config/demo.yaml`, this file talks to `mediafetch mock-server --port 8631`, never to Apple.
        source:
          use: itunes
          endpoint: http://127.0.0.1:8631
          term: love
          media: music
          entity: song
          max-items: 40
          requests-per-minute: 0     # the mock does not throttle; Apple's API wants 20 at most
        transport:
          use: curl
          concurrency: 8
        sink:
          use: directory
          path: ../demo-output       # relative to this file; `mediafetch demo` stores in ./demo-output instead
          layout: "{artist}/{album}/{track-number:02} {title}.{ext}"
        """
}
