// A `RunToken` is the proof that a run is executing a call: only registry-core can make one.
use registry_core::__private::RunToken;

fn main() {
    let _ = RunToken(std::marker::PhantomData);
}
