// `Arguments` is made only by registry-core, from a call a run has validated: there is no
// public constructor.
use registry_core::__private::Arguments;

fn main() {
    let _ = Arguments::new(serde_json::Map::new());
}
