// murmur._murmur: the Python binding of api/peer.h (pybind11). The model is a float32 NumPy
// array (for PyTorch: a CPU tensor's .numpy(), which shares its memory) or a GPU array with
// __cuda_array_interface__ (a CUDA tensor, with device='cuda:N'), which murmur mixes into in
// place; it is kept alive by the Peer. Errors: a bad argument is ValueError, anything
// else murmur.Error, each with murmur's reason. Next and Done release the GIL while they block.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/peer.h"
#include "base/config.h"

namespace py = pybind11;
using murmur::api::Peer;
using murmur::api::Progress;
using murmur::api::Turn;

namespace {

PyObject* g_error = nullptr;  // murmur.Error (a RuntimeError)

[[noreturn]] void Raise(const murmur::Status& status) {
  const std::string message(status.message());
  if (status.code() == murmur::StatusCode::kInvalidArgument) throw py::value_error(message);
  PyErr_SetString(g_error,
                  (std::string(murmur::StatusCodeName(status.code())) + ": " + message).c_str());
  throw py::error_already_set();
}

template <typename T>
T Value(murmur::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// The model's memory: a float32 NumPy array (host), or any object with
// __cuda_array_interface__ (a PyTorch CUDA tensor, a CuPy array) with config's device = cuda:N.
std::span<float> ModelSpan(const py::object& params,
                           const std::map<std::string, std::string>& config) {
  if (py::hasattr(params, "__cuda_array_interface__")) {
    const py::dict cai = params.attr("__cuda_array_interface__");
    const auto typestr = cai["typestr"].cast<std::string>();
    if (typestr != "<f4") throw py::value_error("the model must be float32, not " + typestr);
    const auto shape = cai["shape"].cast<std::vector<int64_t>>();
    if (shape.size() != 1) throw py::value_error("the model must be one flat (1-D) array");
    if (cai.contains("strides") && !cai["strides"].is_none() &&
        cai["strides"].cast<std::vector<int64_t>>() != std::vector<int64_t>{4}) {
      throw py::value_error("the model must be contiguous");
    }
    const auto data = cai["data"].cast<std::pair<uintptr_t, bool>>();
    if (data.second) throw py::value_error("the model must be writeable");
    const auto device = config.find("device");
    if (device == config.end() || device->second.rfind("cuda", 0) != 0) {
      throw py::value_error(
          "the model is GPU memory (__cuda_array_interface__): give "
          "device='cuda:N', the GPU it is on");
    }
    if (shape[0] == 0) return {};
    return {reinterpret_cast<float*>(data.first), static_cast<size_t>(shape[0])};
  }
  py::array array = params.cast<py::array>();
  if (!array.dtype().is(py::dtype::of<float>())) {
    throw py::value_error("the model must be float32, not " + std::string(py::str(array.dtype())));
  }
  if (!(array.flags() & py::array::c_style)) throw py::value_error("the model must be contiguous");
  if (!array.writeable()) throw py::value_error("the model must be writeable");
  if (array.ndim() != 1) throw py::value_error("the model must be one flat (1-D) array");
  return {static_cast<float*>(array.mutable_data()), static_cast<size_t>(array.size())};
}

// A caller's checkpoint sections as a dict: float32 arrays (tensors), int64 arrays (indices),
// str (text) and non-negative int (numbers); anything else is a ValueError naming the entry.
murmur::api::SavedState StateFromDict(const py::object& object) {
  if (!py::isinstance<py::dict>(object)) {
    throw py::value_error("save_state must return a dict, not " +
                          std::string(py::str(object.get_type().attr("__name__"))));
  }
  murmur::api::SavedState state;
  for (const auto& [k, v] : object.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k)) throw py::value_error("save_state: a key is not a str");
    const std::string name = k.cast<std::string>();
    if (py::isinstance<py::bool_>(v)) {
      throw py::value_error("save_state: '" + name + "' is a bool; give an int (0 or 1)");
    } else if (py::isinstance<py::int_>(v)) {
      const auto n = v.cast<py::int_>();
      if (n < py::int_(0)) throw py::value_error("save_state: '" + name + "' is negative");
      state.numbers[name] = n.cast<uint64_t>();
    } else if (py::isinstance<py::str>(v)) {
      state.text[name] = v.cast<std::string>();
    } else if (py::isinstance<py::array>(v)) {
      const auto a = v.cast<py::array>();
      if (a.dtype().is(py::dtype::of<float>())) {
        const auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
        state.tensors[name].assign(c.data(), c.data() + c.size());
      } else if (a.dtype().is(py::dtype::of<int64_t>())) {
        const auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
        state.indices[name].assign(c.data(), c.data() + c.size());
      } else {
        throw py::value_error("save_state: '" + name + "' is an array of " +
                              std::string(py::str(a.dtype())) + "; give float32 or int64");
      }
    } else {
      throw py::value_error("save_state: '" + name + "' is a " +
                            std::string(py::str(v.get_type().attr("__name__"))) +
                            "; give a float32 or int64 NumPy array, a str or an int");
    }
  }
  return state;
}

py::dict DictFromState(const murmur::api::SavedState& state) {
  py::dict out;
  for (const auto& [name, v] : state.tensors)
    out[py::str(name)] = py::array_t<float>(v.size(), v.data());
  for (const auto& [name, v] : state.indices)
    out[py::str(name)] = py::array_t<int64_t>(v.size(), v.data());
  for (const auto& [name, v] : state.text) out[py::str(name)] = py::str(v);
  for (const auto& [name, v] : state.numbers) out[py::str(name)] = py::int_(v);
  return out;
}

class PyPeer {
 public:
  PyPeer(py::object params, const std::map<std::string, std::string>& config, py::object evaluate,
         py::object save_state, py::object restore_state, py::object replaced) {
    std::span<float> span = ModelSpan(params, config);
    params_ = params;  // keeps the memory alive as long as the peer
    murmur::api::EvaluateFn fn;
    if (!evaluate.is_none()) {
      if (!PyCallable_Check(evaluate.ptr())) throw py::value_error("evaluate must be callable");
      evaluate_ = evaluate;
      // Runs inside Next/Done (the GIL released): takes it, and keeps an exception for the
      // call that ran it to raise.
      fn = [this](bool full) -> std::optional<double> {
        py::gil_scoped_acquire acquire;
        try {
          py::object r = evaluate_(full);
          if (r.is_none()) return std::nullopt;
          return r.cast<double>();
        } catch (py::error_already_set& e) {
          if (!pending_.has_value()) pending_ = std::string("evaluate raised: ") + e.what();
        } catch (py::cast_error& e) {
          if (!pending_.has_value())
            pending_ = std::string("evaluate must return a float or None: ") + e.what();
        }
        return std::nullopt;
      };
    }
    murmur::api::Hooks hooks;
    if (save_state.is_none() != restore_state.is_none()) {
      throw py::value_error("save_state and restore_state go together (a checkpoint needs both)");
    }
    if (!save_state.is_none()) {
      if (!PyCallable_Check(save_state.ptr()) || !PyCallable_Check(restore_state.ptr())) {
        throw py::value_error("save_state and restore_state must be callable");
      }
      save_state_ = save_state;
      restore_state_ = restore_state;
      // Both run inside murmur's calls (the GIL released): they take it. An exception fails the
      // checkpoint (logged and counted), and is raised by the call that ran it.
      hooks.save_state = [this]() -> murmur::StatusOr<murmur::api::SavedState> {
        py::gil_scoped_acquire acquire;
        try {
          return StateFromDict(save_state_());
        } catch (py::error_already_set& e) {
          return Keep(std::string("save_state raised: ") + e.what());
        } catch (py::value_error& e) {
          return Keep(e.what());
        } catch (py::cast_error& e) {
          return Keep(std::string("save_state: ") + e.what());
        }
      };
      hooks.restore_state = [this](const murmur::api::SavedState& state) -> murmur::Status {
        py::gil_scoped_acquire acquire;
        try {
          restore_state_(DictFromState(state));
          return murmur::OkStatus();
        } catch (py::error_already_set& e) {
          return Keep(std::string("restore_state raised: ") + e.what());
        }
      };
    }
    if (!replaced.is_none()) {
      if (!PyCallable_Check(replaced.ptr())) throw py::value_error("replaced must be callable");
      replaced_ = replaced;
      hooks.replaced = [this] {
        py::gil_scoped_acquire acquire;
        try {
          replaced_();
        } catch (py::error_already_set& e) {
          (void)Keep(std::string("replaced raised: ") + e.what());
        }
      };
    }
    {
      py::gil_scoped_release release;
      auto peer = Peer::Start(config, span, fn, std::move(hooks));
      if (!peer.ok()) {
        py::gil_scoped_acquire acquire;
        Raise(peer.status());
      }
      peer_ = *std::move(peer);
    }
    RaisePending();
  }

  Turn Next() {
    murmur::StatusOr<Turn> turn = murmur::InternalError("not run");
    {
      py::gil_scoped_release release;
      turn = peer_->Next();
    }
    RaisePending();
    return Value(std::move(turn));
  }
  void Done(std::optional<double> loss, int64_t samples, double compute_s) {
    murmur::Status s;
    {
      py::gil_scoped_release release;
      s = peer_->Done(loss, samples, compute_s);
    }
    RaisePending();
    if (!s.ok()) Raise(s);
  }
  void Stop() { peer_->Stop(); }
  void EndTraining() { peer_->EndTraining(); }
  void Log(const std::string& name, double value) {
    if (murmur::Status s = peer_->Log(name, value); !s.ok()) Raise(s);
  }
  Progress Finish() {
    murmur::StatusOr<Progress> p = murmur::InternalError("not run");
    {
      py::gil_scoped_release release;
      p = peer_->Finish();
    }
    RaisePending();
    return Value(std::move(p));
  }
  Progress GetProgress() const { return peer_->GetProgress(); }
  py::object params() const { return params_; }

 private:
  // Keeps the first error of a callback for the call that ran it, and fails the hook.
  murmur::Status Keep(std::string message) {
    if (!pending_.has_value()) pending_ = message;
    return murmur::FailedPreconditionError(std::move(message));
  }
  void RaisePending() {
    if (!pending_.has_value()) return;
    std::string message = *std::exchange(pending_, std::nullopt);
    PyErr_SetString(g_error, message.c_str());
    throw py::error_already_set();
  }

  py::object params_;
  py::object evaluate_;
  py::object save_state_;
  py::object restore_state_;
  py::object replaced_;
  std::optional<std::string> pending_;  // an exception of a callback, raised after the call
  std::unique_ptr<Peer> peer_;
};

}  // namespace

PYBIND11_MODULE(_murmur, m) {
  m.doc() = "murmur: decentralized, straggler-tolerant gossip training of your own model";
  g_error = PyErr_NewException("murmur.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(g_error);

  py::class_<Turn>(m, "Turn", "What the caller does next (Peer.next())")
      .def_readonly("step", &Turn::step,
                    "compute one local step now, then done(); False: the run is over")
      .def_readonly("lr", &Turn::lr,
                    "the cluster schedule's rate for this step (None: your optimizer's own)")
      .def_readonly(
          "model_replaced", &Turn::model_replaced,
          "the model was replaced since the last step (a snapshot, a catch-up): reset momentum")
      .def("__repr__", [](const Turn& t) {
        return "Turn(step=" + std::string(t.step ? "True" : "False") +
               ", lr=" + (t.lr ? std::to_string(*t.lr) : "None") +
               ", model_replaced=" + (t.model_replaced ? "True" : "False") + ")";
      });

  py::class_<Progress>(m, "Progress", "A peer's state")
      .def_readonly("id", &Progress::id)
      .def_readonly("endpoint", &Progress::endpoint)
      .def_readonly("phase", &Progress::phase)
      .def_readonly("activity", &Progress::activity)
      .def_readonly("accuracy", &Progress::accuracy)
      .def_readonly("own_accuracy", &Progress::own_accuracy)
      .def_readonly("step", &Progress::step)
      .def_readonly("local_steps", &Progress::local_steps)
      .def_readonly("samples", &Progress::samples)
      .def_readonly("budget_samples", &Progress::budget_samples)
      .def_readonly("lr", &Progress::lr)
      .def_readonly("live_members", &Progress::live_members)
      .def_readonly("rounds", &Progress::rounds)
      .def_readonly("bytes_sent", &Progress::bytes_sent)
      .def_readonly("bytes_received", &Progress::bytes_received)
      .def_readonly("consensus_distance", &Progress::consensus_distance)
      .def_readonly("wait_s", &Progress::wait_s)
      .def_readonly("stragglers", &Progress::stragglers)
      .def_readonly("finished", &Progress::finished)
      .def_readonly("end_reason", &Progress::end_reason)
      .def_readonly("finish", &Progress::finish)
      .def_readonly("finish_contributors", &Progress::finish_contributors)
      .def_readonly("elapsed_s", &Progress::elapsed_s)
      .def_readonly("loss", &Progress::loss)
      .def_readonly("perplexity", &Progress::perplexity)
      .def_readonly("max_lag", &Progress::max_lag)
      .def_readonly("straggle", &Progress::straggle)
      .def("__repr__", [](const Progress& p) {
        return "Progress(step=" + std::to_string(p.step) +
               ", samples=" + std::to_string(p.samples) +
               ", accuracy=" + py::repr(py::cast(p.accuracy)).cast<std::string>() +
               ", live_members=" + std::to_string(p.live_members) + ", finish='" + p.finish +
               "', end_reason='" + p.end_reason + "', bytes_sent=" + std::to_string(p.bytes_sent) +
               ")";
      });

  py::class_<PyPeer>(m, "Peer",
                     "One peer of a gossip training cluster training `params` (a flat float32 "
                     "array, mixed into in place). `config`: murmur's keys as text (known_keys())")
      .def(py::init<py::object, const std::map<std::string, std::string>&, py::object, py::object,
                    py::object, py::object>(),
           py::arg("params"), py::arg("config"), py::arg("evaluate") = py::none(),
           py::arg("save_state") = py::none(), py::arg("restore_state") = py::none(),
           py::arg("replaced") = py::none(),
           "evaluate(full) -> accuracy in [0, 1] or None: the model's test accuracy (full: the "
           "whole test set, else a periodic subset); allows eval_every and target_accuracy. "
           "save_state() -> dict and restore_state(dict): your optimizer's state in the peer's "
           "checkpoints (float32/int64 arrays, str, int); allow checkpoint_dir and "
           "checkpoint_every. replaced(): called the moment murmur replaces the model (a "
           "snapshot, a catch-up, the consensus finish), before anything else reads your state")
      .def("next", &PyPeer::Next, "block until the next step may run, or the run is over")
      .def("done", &PyPeer::Done, py::arg("loss"), py::arg("samples"), py::arg("compute_s") = -1.0,
           "the step is done (in place on params): run the gossip round; loss None: none given "
           "(the step counts, the loss is not averaged), not finite: the step was skipped")
      .def("log", &PyPeer::Log, py::arg("name"), py::arg("value"),
           "a figure of the program's own: its latest value goes into the report lines "
           "(murmur local --run-dir's series, murmur report)")
      .def("end_training", &PyPeer::EndTraining,
           "the program's own training is over before the budget: the run ends at the next "
           "turn with the consensus finish, as a spent budget ends it")
      .def("stop", &PyPeer::Stop,
           "end the run early, as a stop ends murmur node's: no consensus finish")
      .def("finish", &PyPeer::Finish, "after next() said the run is over: the final state; leaves")
      .def("progress", &PyPeer::GetProgress)
      .def_property_readonly("params", &PyPeer::params);
  m.def("known_keys", &Peer::KnownKeys, "the config keys Peer accepts");
  m.attr("__version__") = MURMUR_VERSION;
}
