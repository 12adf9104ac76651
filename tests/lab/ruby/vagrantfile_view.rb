# Loads the project's Vagrantfile with a recording stand-in for Vagrant's config object and prints, as JSON,
# what it configured per machine. Used by tests/lab/test_vagrant.py to check the Vagrantfile's view of a lab
# without a provider (Vagrant itself refuses even `status` when the provider is not installed).
require "json"

class Recorder
  attr_reader :calls

  def initialize(path = [])
    @path = path
    @calls = []
    @children = {}
  end

  def method_missing(name, *args, **kwargs, &block)
    key = name.to_s
    if key.end_with?("=")
      @calls << { "set" => (@path + [key.chomp("=")]).join("."), "value" => args.first }
      return args.first
    end
    if block || !args.empty? || !kwargs.empty?
      child = Recorder.new(@path + [key])
      @calls << { "call" => (@path + [key]).join("."), "args" => args.map(&:to_s), "kwargs" => kwargs.transform_keys(&:to_s) }
      if block
        block.call(child, *([nil] * [block.arity - 1, 0].max))
        @calls << { "block" => (@path + [key]).join("."), "args" => args.map(&:to_s), "calls" => child.calls }
      end
      return child
    end
    @children[key] ||= Recorder.new(@path + [key]).tap { |c| c.instance_variable_set(:@calls, @calls) }
  end

  def respond_to_missing?(*) = true
end

module Vagrant
  def self.configure(_version)
    recorder = Recorder.new
    yield recorder
    puts JSON.generate(recorder.calls)
  end
end

load ARGV.fetch(0)
