"""A vdnn.Net shared by threads (issue 42: two threads calling train_step on one Net crashed).
Its calls take turns, as under a lock, so two threads training one Net on the same batch end
where one thread making all their steps ends, whichever thread made which step."""
import threading

import numpy as np

import vdnn

STEPS = 6  # per training thread


def test_two_threads_training_one_net_take_turns():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    serial = vdnn.Net("fmnist_cnn", batch=8)
    for _ in range(2 * STEPS):
        serial.train_step(x, y, 0.01)
    for _ in range(5):  # the crash came in 6 runs of 7
        net = vdnn.Net("fmnist_cnn", batch=8)
        errors = []

        def run(work):
            try:
                for _ in range(STEPS):
                    work()
            except Exception as e:  # pylint: disable=broad-except
                errors.append(e)

        workers = [lambda: net.train_step(x, y, 0.01), lambda: net.train_step(x, y, 0.01),
                   lambda: (net.weights(), net.gradients(), net.infer(x), net.weights_sha256())]
        threads = [threading.Thread(target=run, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert net.steps == 2 * STEPS
        assert net.weights_sha256() == serial.weights_sha256()


def test_a_train_callback_may_call_the_net_it_trains():
    net = vdnn.Net("fmnist_cnn", batch=16)
    hashes = []
    vdnn.train(net, data="synthetic", iterations=3, callback=lambda step: hashes.append(net.weights_sha256()))
    assert len(set(hashes)) == 3 and hashes[-1] == net.weights_sha256()


def test_a_train_callback_may_hand_the_net_to_another_thread_and_wait_for_it():
    """The re-probe: evaluating in an executor from the callback (a thread calling net.infer, joined)
    deadlocked, the Net held by vdnn.train; between steps it is now free."""
    net = vdnn.Net("fmnist_cnn", batch=16)
    x = np.random.default_rng(1).standard_normal((4, 1, 28, 28)).astype(np.float32)
    seen = []

    def evaluate_elsewhere(step):
        worker = threading.Thread(target=lambda: seen.append(net.infer(x)))
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "net.infer on another thread waited for vdnn.train"

    vdnn.train(net, data="synthetic", iterations=3, callback=evaluate_elsewhere)
    assert len(seen) == 3 and not np.array_equal(seen[0], seen[2])  # each after its step's update
    assert net.steps == 3


def test_two_threads_sharing_one_batches_iterator_get_each_batch_once():
    data = vdnn.load_data("fmnist_cnn", "synthetic", synthetic_samples=256, seed=2)
    expected = [y.tolist() for _, y in vdnn.batches(data, batch=8, seed=5)]
    for _ in range(3):
        shared = iter(vdnn.batches(data, batch=8, seed=5))
        got, errors = [], []

        def drain():
            try:
                for _, y in shared:
                    got.append(y.tolist())
            except Exception as e:  # pylint: disable=broad-except
                errors.append(e)

        threads = [threading.Thread(target=drain) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a thread hangs on the shared iterator"
        assert not errors, errors
        assert sorted(got) == sorted(expected)  # every batch once: none twice, none lost
